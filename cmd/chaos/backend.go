package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults/control"
)

func newBackendCmd() *cobra.Command {
	var (
		scriptPath, listen, admin, adminToken, adminTokenFile, transport, protocol string
		token, tokenFile                                                           string
		stdio, allowNetwork                                                        bool
		leaseTTL, maxTTL                                                           time.Duration
		verbose                                                                    bool
	)
	cmd := &cobra.Command{
		Use:   "backend --script FILE",
		Short: "Run one scriptable fake MCP backend as a process",
		Long: `Run one fake MCP backend from a script (see fakebackends/README.md).

Once it serves, it prints one JSON line with its URLs (on stdout, or on
stderr with --stdio, where stdout carries the protocol), so a harness can
spawn it and kill it for real: SIGKILL is a crash, SIGSTOP a stall.
Crash faults with exit: true end the process with their exit code.

The control API's bearer token comes from --admin-token-file FILE or the
CHAOS_ADMIN_TOKEN environment variable; --admin-token works too but shows
the token to every local user (ps, /proc/PID/cmdline). A control API off
loopback is refused without one (exit 2).

The MCP listener is loopback by default. Off loopback it needs a bearer
token too, from --token-file FILE or $VMCP_CHAOS_TOKEN (--token shows it in
ps); every MCP request then needs "Authorization: Bearer TOKEN".
--allow-network serves it without one: only inside an isolated network.

Faults set through the control API are held by a lease, as on chaos proxy:
PUT/POST /faults?ttl=D (default --lease-ttl), renewed by POST /lease; when
nobody renews it the faults are cleared.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if scriptPath == "" {
				return usageError(errors.New("backend: --script is required"))
			}
			script, err := fakebackends.LoadScript(scriptPath)
			if err != nil {
				return usageError(err) // a bad script is a config error: exit 2
			}
			if cmd.Flags().Changed("listen") {
				script.Listen = listen
			}
			if cmd.Flags().Changed("admin") {
				script.Admin = admin
			}
			if cmd.Flags().Changed("transport") {
				script.Transport = fakebackends.Transport(transport)
			}
			if cmd.Flags().Changed("protocol") {
				script.Protocol = fakebackends.Protocol(protocol)
			}
			if stdio {
				script.Transport = fakebackends.TransportStdio
			}
			if err := script.Validate(); err != nil {
				return usageError(fmt.Errorf("backend: %w", err)) // a bad --listen or --admin
			}
			if err := checkLease("backend", leaseTTL, maxTTL); err != nil {
				return err
			}
			adminToken, err = resolveSecret("admin-token", adminToken, "admin-token-file", adminTokenFile, "CHAOS_ADMIN_TOKEN")
			if err != nil {
				return usageError(err)
			}
			token, err = resolveSecret("token", token, "token-file", tokenFile, "VMCP_CHAOS_TOKEN")
			if err != nil {
				return usageError(err)
			}
			opts := []fakebackends.Option{
				fakebackends.WithExit(os.Exit),
				fakebackends.WithAdminToken(adminToken),
				fakebackends.WithToken(token),
				fakebackends.WithLease(leaseTTL, maxTTL),
				fakebackends.WithLogger(newLogger(stderr, verbose, slog.LevelInfo)),
			}
			if allowNetwork {
				opts = append(opts, fakebackends.WithAllowNetwork())
			}
			if script.Transport == fakebackends.TransportStdio {
				err = runStdioBackend(cmd.Context(), script, opts)
			} else {
				err = runHTTPBackend(cmd.Context(), script, opts, cmd.OutOrStdout())
			}
			if errors.Is(err, fakebackends.ErrAddress) {
				return usageError(err)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&scriptPath, "script", "", "backend script (YAML)")
	f.StringVar(&listen, "listen", "", "MCP listen address (overrides the script)")
	f.StringVar(&admin, "admin", "", "control API listen address (overrides the script)")
	f.StringVar(&adminToken, "admin-token", "", "bearer token for the control API; required off loopback. Visible in ps: prefer --admin-token-file or env CHAOS_ADMIN_TOKEN")
	f.StringVar(&adminTokenFile, "admin-token-file", "", "read the control API's bearer token from this file (surrounding whitespace trimmed)")
	f.StringVar(&transport, "transport", "", "streamable-http | sse | stdio (overrides the script)")
	f.StringVar(&protocol, "protocol", "", "legacy | modern | auto (overrides the script)")
	f.StringVar(&token, "token", "", "bearer token the MCP listener requires; required off loopback. Visible in ps: prefer --token-file or env VMCP_CHAOS_TOKEN")
	f.StringVar(&tokenFile, "token-file", "", "read the MCP listener's bearer token from this file (surrounding whitespace trimmed)")
	f.BoolVar(&allowNetwork, "allow-network", false, "serve MCP off loopback without a token (inside an isolated network only)")
	f.DurationVar(&leaseTTL, "lease-ttl", control.DefaultLeaseTTL, "lease of faults set through the control API without ?ttl=")
	f.DurationVar(&maxTTL, "max-lease-ttl", control.DefaultMaxLeaseTTL, "longest lease a controller may ask for")
	f.BoolVar(&stdio, "stdio", false, "serve MCP on stdin/stdout")
	f.BoolVarP(&verbose, "verbose", "v", false, "log to stderr")
	return cmd
}

// newLogger logs text to w: at level with -v, else warnings only.
func newLogger(w io.Writer, verbose bool, level slog.Level) *slog.Logger {
	if !verbose {
		level = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

func runHTTPBackend(ctx context.Context, script *fakebackends.Script, opts []fakebackends.Option, out io.Writer) error {
	startCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	b, err := fakebackends.Start(startCtx, script, opts...)
	cancel()
	if err != nil {
		return err
	}
	s := b.Script()
	if err := json.NewEncoder(out).Encode(fakebackends.ReadyLine{Name: s.Name, Transport: string(s.Transport), Protocol: string(s.Protocol),
		URL: b.URL(), Admin: b.AdminURL(), PID: os.Getpid()}); err != nil {
		_ = b.Close()
		return err
	}
	<-ctx.Done()
	return b.Close()
}

func runStdioBackend(ctx context.Context, script *fakebackends.Script, opts []fakebackends.Option) error {
	opts = append(opts, fakebackends.WithOnReady(func(adminURL string) {
		_ = json.NewEncoder(stderr).Encode(fakebackends.ReadyLine{Name: script.Name, Transport: string(fakebackends.TransportStdio),
			Protocol: string(fakebackends.ProtocolLegacy), Admin: adminURL, PID: os.Getpid()})
	}))
	err := fakebackends.ServeStdio(ctx, script, os.Stdin, os.Stdout, opts...)
	if errors.Is(err, fakebackends.ErrCrashed) {
		return &exitError{code: 1, err: fmt.Errorf("backend %q crashed (crash fault)", script.Name)}
	}
	return err
}
