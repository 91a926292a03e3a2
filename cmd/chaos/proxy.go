package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/vmcp-chaos/vmcp-chaos/proxy"
)

// ProxyReadyLine is the JSON line `chaos proxy` prints once it serves.
type ProxyReadyLine struct {
	Upstream string `json:"upstream"`
	URL      string `json:"url"`
	Admin    string `json:"admin"`
	LeaseTTL string `json:"leaseTtl"`
	PID      int    `json:"pid"`
}

func newProxyCmd() *cobra.Command {
	var (
		opts             proxy.Options
		verbose          bool
		leaseTTL, maxTTL time.Duration
		adminTokenFile   string
		tokenFile        string
	)
	cmd := &cobra.Command{
		Use:   "proxy --upstream URL [--listen ADDR] [--admin ADDR]",
		Short: "Run a transparent MCP fault proxy in front of one real backend",
		Long: `Run a transparent, MCP-aware proxy in front of one real MCP backend
(streamable HTTP or legacy SSE). Point the gateway's backend URL at the
proxy's url; with no fault set, traffic passes through unchanged.

Faults are set through the control API on --admin, with the fake backends'
routes and bodies (see fakebackends/README.md):

  curl -X PUT  'http://ADMIN/faults?ttl=30s' -d '[{"kind":"http_status","status":503}]'
  curl -X POST  http://ADMIN/lease          # renew the lease
  curl -X DELETE http://ADMIN/faults        # clear

Every fault set holds a lease (--lease-ttl unless ?ttl= says otherwise): if
nobody renews it, the faults are cleared and the deployment heals itself.
The control API binds loopback unless a token is given (--admin-token-file
FILE or $CHAOS_ADMIN_TOKEN; --admin-token shows it to every local user in
ps), which every control request must then carry as a bearer token; a
token can be set on loopback too.

The MCP listener is loopback by default: the proxy relays whoever reaches
it to the backend. Off loopback it needs a token (--token-file FILE or
$VMCP_CHAOS_TOKEN; --token shows it in ps), carried as
"Proxy-Authorization: Bearer TOKEN" (the client's own Authorization then
goes upstream) or "Authorization: Bearer TOKEN"; the proxy removes it
before relaying.

Prints one JSON line {upstream,url,admin,leaseTtl,pid} once it serves;
SIGINT or SIGTERM clears the faults and stops.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Upstream == "" {
				return usageError(errors.New("proxy: --upstream is required"))
			}
			if err := checkUpstreamURL("upstream", opts.Upstream); err != nil {
				return err
			}
			if err := checkListenAddr("listen", opts.Listen); err != nil {
				return err
			}
			if err := checkListenAddr("admin", opts.Admin); err != nil {
				return err
			}
			if err := checkLease("proxy", leaseTTL, maxTTL); err != nil {
				return err
			}
			tok, err := resolveSecret("admin-token", opts.AdminToken, "admin-token-file", adminTokenFile, "CHAOS_ADMIN_TOKEN")
			if err != nil {
				return err
			}
			opts.AdminToken = tok
			if opts.Token, err = resolveSecret("token", opts.Token, "token-file", tokenFile, "VMCP_CHAOS_TOKEN"); err != nil {
				return err
			}
			opts.LeaseTTL, opts.MaxLeaseTTL = leaseTTL, maxTTL
			opts.Logger = newLogger(cmd.ErrOrStderr(), verbose, slog.LevelDebug)
			p, err := proxy.New(opts)
			if err != nil {
				return usageError(err)
			}
			startCtx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			err = p.Start(startCtx)
			cancel()
			if err != nil {
				return usageError(err)
			}
			ready := ProxyReadyLine{Upstream: p.Upstream(), URL: p.URL(), Admin: p.AdminURL(), LeaseTTL: leaseTTL.String(), PID: os.Getpid()}
			if err := json.NewEncoder(cmd.OutOrStdout()).Encode(ready); err != nil {
				return err
			}
			<-cmd.Context().Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return p.Close(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Upstream, "upstream", "", "the backend's MCP URL (http or https), e.g. http://10.0.0.7:8080/mcp")
	f.StringVar(&opts.Listen, "listen", "127.0.0.1:0", "MCP listen address")
	f.StringVar(&opts.Admin, "admin", "127.0.0.1:0", "control API listen address (non-loopback needs --admin-token-file or $CHAOS_ADMIN_TOKEN)")
	f.StringVar(&opts.AdminToken, "admin-token", "", "bearer token the control API requires (default $CHAOS_ADMIN_TOKEN). Visible in ps: prefer --admin-token-file")
	f.StringVar(&adminTokenFile, "admin-token-file", "", "read the control API's bearer token from this file (surrounding whitespace trimmed)")
	f.StringVar(&opts.Token, "token", "", "bearer token the MCP listener requires; required off loopback. Visible in ps: prefer --token-file or env VMCP_CHAOS_TOKEN")
	f.StringVar(&tokenFile, "token-file", "", "read the MCP listener's bearer token from this file (surrounding whitespace trimmed)")
	f.DurationVar(&leaseTTL, "lease-ttl", proxy.DefaultLeaseTTL, "lease of faults set without ?ttl=")
	f.DurationVar(&maxTTL, "max-lease-ttl", proxy.DefaultMaxLeaseTTL, "longest lease a controller may ask for")
	f.BoolVarP(&verbose, "verbose", "v", false, "log upstream errors to stderr")
	return cmd
}
