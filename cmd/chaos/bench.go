package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vmcp-chaos/vmcp-chaos/bench"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
)

// benchOptions are the flags of `chaos bench`.
type benchOptions struct {
	profile        string
	gatewayCmd     string
	configTemplate string
	readyURL       string
	mcpPath        string
	clients        int
	duration       time.Duration
	calls          int
	callTimeout    time.Duration
	opens          int
	sessions       int
	revisions      []string
	out            string
}

func newBenchCmd() *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure a gateway's performance against calling its backends directly",
		Long: `Start fake backends (as processes) and a gateway in front of them, then
measure, in the same run, the gateway and the direct backend:

  bench/calls/<revision>   healthy echo calls from --clients clients for
                           --duration (or --calls in all): throughput,
                           p50/p99/max, errors, the gateway's CPU per call
                           against the backend's own, its peak RSS, and the
                           p50 a lone client sees
  bench/open/2-backends    legacy session open (initialize, then tools/list)
  bench/open/N-sessions    --sessions legacy sessions opened 16 at a time
  bench/open/4x500-tools   session open with 4 backends of 500 tools each

Direct figures are those of a client talking to the (first) backend
itself. The gateway runs as a process so its CPU seconds and RSS come
from /proc. Every call has a deadline (--call-timeout).

  chaos bench                                   # our gateway (chaos vmcp)
  chaos bench --profile profiles/chaos-vmcp.yaml # the gateway a target profile describes
  chaos bench --out bench.json --duration 5s
  chaos bench --gateway-cmd 'vmcp serve --config {{.ConfigPath}}' \
      --config-template toolhive.yaml.tmpl --ready-url '{{.BaseURL}}/status'

The figures go into the results JSON (--out) as scenarios named bench/...
with Figures. Exit status: 0 measured, 1 a bench scenario failed (a healthy
call or session open failed), 2 bad flags or the topology did not start,
130 interrupted (the figures measured so far are written).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.profile, "profile", "", "a target profile (YAML) describing the gateway under test (as chaos run --profile); "+
		"--gateway-cmd, --config-template, --ready-url and --mcp-path override its fields")
	f.StringVar(&o.gatewayCmd, "gateway-cmd", "", "the gateway's command line (templates as in chaos run); default: this binary's `vmcp`")
	f.StringVar(&o.configTemplate, "config-template", "", "the gateway's config file template (required with --gateway-cmd)")
	f.StringVar(&o.readyURL, "ready-url", "", "URL template polled until the gateway answers")
	f.StringVar(&o.mcpPath, "mcp-path", "", "the gateway's MCP endpoint path (default /mcp, or the profile's)")
	f.IntVar(&o.clients, "clients", 64, "concurrent clients in the call runs")
	f.DurationVar(&o.duration, "duration", 2*time.Second, "length of each call run (per revision, per endpoint)")
	f.IntVar(&o.calls, "calls", 100000, "at most this many calls per call run")
	f.DurationVar(&o.callTimeout, "call-timeout", 5*time.Second, "deadline of every call (and the gateway's backend call timeout)")
	f.IntVar(&o.opens, "opens", 30, "sessions opened one after another for the session-open medians")
	f.IntVar(&o.sessions, "sessions", 1000, "sessions opened (16 at a time) and held for the many-sessions figure; 0 skips it")
	f.StringSliceVar(&o.revisions, "revision", []string{"legacy", "modern"}, "protocol revisions of the call runs (legacy = 2025-11-25, modern = 2026-07-28)")
	f.StringVarP(&o.out, "out", "o", "", "write the results JSON here")
	return cmd
}

func usage(format string, args ...any) error {
	return usageError(fmt.Errorf("bench: "+format, args...))
}

func runBench(cmd *cobra.Command, o benchOptions) error {
	if o.clients < 1 || o.clients > 10000 {
		return usage("--clients %d: want 1..10000", o.clients)
	}
	if o.duration <= 0 || o.duration > 10*time.Minute {
		return usage("--duration %v: want more than 0 and at most 10m", o.duration)
	}
	if o.calls < 1 {
		return usage("--calls %d: want at least 1", o.calls)
	}
	if o.callTimeout <= 0 || o.callTimeout > 5*time.Minute {
		return usage("--call-timeout %v: want more than 0 and at most 5m", o.callTimeout)
	}
	if o.opens < 1 || o.opens > 10000 {
		return usage("--opens %d: want 1..10000", o.opens)
	}
	if o.sessions < 0 || o.sessions > 20000 {
		return usage("--sessions %d: want 0..20000", o.sessions)
	}
	var revs []harness.Revision
	for _, r := range o.revisions {
		switch rev := harness.Revision(strings.TrimSpace(r)); rev {
		case harness.RevisionLegacy, harness.RevisionModern:
			revs = append(revs, rev)
		default:
			return usage("--revision %q: want legacy or modern", r)
		}
	}
	tc := harness.TargetConfig{Profile: o.profile, Kind: "exec", GatewayCmd: o.gatewayCmd, ConfigTemplate: o.configTemplate,
		ReadyURL: o.readyURL, MCPPath: o.mcpPath}
	target, err := tc.Target(os.Executable)
	if err != nil {
		return usage("%v", err)
	}
	self, err := os.Executable()
	if err != nil {
		return usage("find this binary (the fake backends run it): %v", err)
	}
	harness.SetChaosBinary(self)
	w := cmd.OutOrStdout()
	ctx := cmd.Context()
	start := time.Now()
	results, err := bench.Run(ctx, bench.Config{Target: target, Runtime: harness.Process{Binary: self},
		Clients: o.clients, Duration: o.duration, Calls: o.calls, CallTimeout: o.callTimeout,
		Opens: o.opens, Sessions: o.sessions, Revisions: revs, Progress: w})
	if results != nil {
		printBench(w, results)
		if o.out != "" {
			werr := os.MkdirAll(filepath.Dir(o.out), 0o755)
			if werr == nil {
				werr = results.WriteFile(o.out)
			}
			if werr != nil {
				return fmt.Errorf("bench: write results: %w", werr)
			}
			fmt.Fprintf(w, "results: %s\n", o.out)
		}
	}
	fmt.Fprintf(w, "chaos bench: done in %s\n", time.Since(start).Round(time.Millisecond))
	switch {
	case results != nil && results.Interrupted:
		return &exitError{code: 130, err: fmt.Errorf("bench: interrupted (%v)", context.Cause(ctx))}
	case err != nil:
		return &exitError{code: 2, err: fmt.Errorf("bench: %w", err)}
	case results.Failed():
		return &exitError{code: 1, err: fmt.Errorf("bench: a scenario failed")}
	}
	return nil
}

// printBench prints each bench scenario's verdict and figures.
func printBench(w interface{ Write([]byte) (int, error) }, results *harness.Results) {
	fmt.Fprintln(w)
	for _, s := range results.Scenarios {
		fmt.Fprintf(w, "%-7s %s\n", strings.ToUpper(string(s.Verdict)), s.Name)
		if s.Reason != "" {
			fmt.Fprintf(w, "        %s\n", s.Reason)
		}
		keys := make([]string, 0, len(s.Figures))
		for k := range s.Figures {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "        %-34s %.4g\n", k, s.Figures[k])
		}
	}
}
