package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/vmcp-chaos/vmcp-chaos/internal/redact"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/access"
)

// gatewayReadyLine is the JSON line `chaos vmcp` prints once it serves.
type gatewayReadyLine struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	Addr string `json:"addr"`
	PID  int    `json:"pid"`
}

func newVMCPCmd() *cobra.Command {
	var configPath, listen, cpuProfile string
	var verbose bool
	cmd := &cobra.Command{
		Use:   "vmcp --config FILE",
		Short: "Run the reference vMCP gateway",
		Long: `Run the reference vMCP gateway (see vmcp/README.md): MCP at /mcp,
GET /status, GET /api/sessions/{id} and, when configured, the health API and
/metrics. Prints one JSON line {name,url,addr,pid} once it serves; SIGINT or
SIGTERM shuts it down (bounded even when backends stall).

With incomingAuth anonymous it listens on loopback addresses only (it
refuses 0.0.0.0 and other addresses, exit 2) unless the configuration says
incomingAuth: {type: anonymous, allowNetwork: true}. The bearer token is
never a flag (flags are visible in ps): it comes from the environment
variable incomingAuth.tokenEnv names, or the file incomingAuth.tokenFile
names. Configuration errors exit 2.

--cpuprofile FILE writes a CPU profile (go tool pprof) of the gateway from
the time it serves until SIGINT/SIGTERM, e.g. under chaos bench:
  chaos bench --steps calls --revision legacy --sessions 0 \
    --config-template harness/targets/templates/chaos-vmcp.yaml.tmpl \
    --gateway-cmd 'chaos vmcp --config {{.ConfigPath}} --listen {{.Listen}} --cpuprofile /tmp/gw.prof'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configPath == "" {
				return usageError(errors.New("vmcp: --config is required"))
			}
			if err := checkListenAddr("listen", listen); err != nil {
				return err
			}
			if cpuProfile != "" {
				if err := checkOutPath("cpuprofile", cpuProfile, configPath); err != nil {
					return err
				}
			}
			cfg, err := vmcp.LoadConfig(configPath)
			if err != nil {
				return usageError(err)
			}
			redact.Secret(cfg.IncomingAuth.Token) // never printed
			g, err := vmcp.New(cfg, vmcp.WithLogger(newLogger(stderr, verbose, slog.LevelInfo)))
			if err != nil {
				return err
			}
			// abort shuts down a gateway that did not get to serve.
			abort := func(err error) error {
				sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer scancel()
				_ = g.Shutdown(sctx)
				return err
			}
			startCtx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			err = g.Start(startCtx, listen)
			cancel()
			if errors.Is(err, access.ErrExposed) {
				return abort(usageError(err))
			}
			if err != nil {
				return abort(err)
			}
			stopProfile, err := startCPUProfile(cpuProfile)
			if err != nil {
				return abort(usageError(err))
			}
			if err := json.NewEncoder(cmd.OutOrStdout()).Encode(gatewayReadyLine{Name: cfg.Name, URL: g.URL(), Addr: g.Addr(), PID: os.Getpid()}); err != nil {
				return err
			}
			<-cmd.Context().Done()
			stopProfile()
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			return g.Shutdown(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&configPath, "config", "", "gateway configuration (YAML)")
	f.StringVar(&listen, "listen", "127.0.0.1:4483", "listen address; off loopback it needs bearer auth or incomingAuth.allowNetwork")
	f.BoolVarP(&verbose, "verbose", "v", false, "log to stderr")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile here, from serving until shutdown")
	return cmd
}

// startCPUProfile starts a CPU profile into path ("" : none) and returns
// the function that stops it and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("vmcp: --cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("vmcp: --cpuprofile %s: %w", path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}
