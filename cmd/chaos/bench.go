package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vmcp-chaos/vmcp-chaos/bench"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// benchOptions are the flags of `chaos bench`.
type benchOptions struct {
	// target: the exec flags (Kind is always exec); Profile is set from
	// profiles, one bench per profile.
	target targets.TargetConfig
	// profiles: --profile, repeatable (several gateways, one after
	// another, side by side).
	profiles []string
	// cfg: the figures' flags (Target, Runtime, Revisions and Progress
	// are set by runBench).
	cfg       bench.Config
	revisions []string
	out       string
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
  bench/error/http-403     time to error while a backend answers tools/call
                           with HTTP 403 (--error-calls calls, one at a
                           time), and how many gateway errors name it
  bench/error/sigkill      the same after the backend process is SIGKILLed
  bench/stall/1s-timeout   --stall-calls calls at once to a stalled backend,
                           the gateway configured with --stall-timeout: when
                           they end, and whether the errors name it
  bench/scale/S-sessions   for each --scale-sessions S: 4 backends, the last
                           crash-looping (SIGKILL, restart, every
                           --crash-every); S sessions opened, then healthy
                           calls at --scale-rate per second over them for
                           --scale-duration: errors, p50/p99, gateway RSS

Direct figures are those of a client talking to the (first) backend
itself. The gateway runs as a process so its CPU seconds and RSS come
from /proc. Every call has a deadline (--call-timeout).

  chaos bench                                   # our gateway (chaos vmcp)
  chaos bench --profile profiles/chaos-vmcp.yaml # the gateway a target profile describes
  chaos bench --profile a.yaml --profile b.yaml --out bench.json
                                                # several gateways, one after another
  chaos bench --out bench.json --duration 5s
  chaos bench --steps scale --scale-sessions 1000,5000 --scale-duration 60s
  chaos bench --gateway-cmd 'vmcp serve --config {{.ConfigPath}}' \
      --config-template toolhive.yaml.tmpl --ready-url '{{.BaseURL}}/status'

The figures go into the results JSON (--out) as scenarios named bench/...
with Figures. With several --profile, the gateways are benched one after
another (each with its own backends, the same flags), printed side by
side (a column per gateway), and --out holds one results set (a run per
gateway) that chaos report renders as a scorecard with the figures side
by side. A gateway whose topology does not start is reported and the next
one benched. Exit status: 0 measured, 1 a bench scenario failed (a healthy
call or session open failed), 2 bad flags or the topology did not start,
130 interrupted (the figures measured so far are written).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sweepBefore(cmd, "chaos bench")
			return runBench(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.profiles, "profile", nil, "a target profile (YAML) describing a gateway under test (as chaos run --profile); repeat it to bench "+
		"several gateways side by side; with one, --gateway-cmd, --config-template, --ready-url and --mcp-path override its fields")
	f.StringVar(&o.target.GatewayCmd, "gateway-cmd", "", "the gateway's command line (templates as in chaos run); default: this binary's `vmcp`")
	f.StringVar(&o.target.ConfigTemplate, "config-template", "", "the gateway's config file template (required with --gateway-cmd)")
	f.StringVar(&o.target.ReadyURL, "ready-url", "", "URL template polled until the gateway answers")
	f.StringVar(&o.target.MCPPath, "mcp-path", "", "the gateway's MCP endpoint path (default /mcp, or the profile's)")
	f.IntVar(&o.cfg.Clients, "clients", 64, "concurrent clients in the call runs")
	f.DurationVar(&o.cfg.Duration, "duration", 2*time.Second, "length of each call run (per revision, per endpoint)")
	f.IntVar(&o.cfg.Calls, "calls", 100000, "at most this many calls per call run")
	f.IntVar(&o.cfg.Pairs, "pairs", 3, "call runs per revision, each a direct run and a gateway run back to back (order alternating); the pair with the median throughput ratio gives the figures, all of them the spread")
	f.DurationVar(&o.cfg.CallTimeout, "call-timeout", 5*time.Second, "deadline of every call (and the gateway's backend call timeout)")
	f.IntVar(&o.cfg.Opens, "opens", 30, "sessions opened one after another for the session-open medians")
	f.IntVar(&o.cfg.Sessions, "sessions", 1000, "sessions opened (16 at a time) and held for the many-sessions figure; 0 skips it")
	f.StringSliceVar(&o.revisions, "revision", []string{"legacy", "modern"}, "protocol revisions of the call runs (legacy = 2025-11-25, modern = 2026-07-28)")
	f.StringSliceVar(&o.cfg.Steps, "steps", bench.StepNames, "what to run: "+strings.Join(bench.StepNames, ", "))
	f.IntVar(&o.cfg.ErrorCalls, "error-calls", 100, "calls per endpoint and fault for the time-to-error figures")
	f.DurationVar(&o.cfg.StallTimeout, "stall-timeout", time.Second, "the gateway's backend call timeout in the error and stall figures")
	f.IntVar(&o.cfg.StallCalls, "stall-calls", 5, "calls made at once to the stalled backend")
	f.DurationVar(&o.cfg.StallDeadline, "stall-deadline", 35*time.Second, "each stall call's own deadline (how long a gateway that ignores its timeout is watched)")
	f.IntSliceVar(&o.cfg.ScaleSessions, "scale-sessions", []int{100}, "sessions of the scale figures, one scenario per count (e.g. 1000,5000)")
	f.DurationVar(&o.cfg.ScaleDuration, "scale-duration", 5*time.Second, "length of each scale load")
	f.IntVar(&o.cfg.ScaleRate, "scale-rate", 500, "healthy calls per second in the scale load")
	f.DurationVar(&o.cfg.CrashEvery, "crash-every", time.Second, "period of the crash-looping backend in the scale figures")
	f.StringVarP(&o.out, "out", "o", "", "write the results JSON here")
	return cmd
}

func usage(format string, args ...any) error {
	return usageError(fmt.Errorf("bench: "+format, args...))
}

func runBench(cmd *cobra.Command, o benchOptions) error {
	switch {
	case o.cfg.Clients < 1 || o.cfg.Clients > 10000:
		return usage("--clients %d: want 1..10000", o.cfg.Clients)
	case o.cfg.Duration <= 0 || o.cfg.Duration > 10*time.Minute:
		return usage("--duration %v: want more than 0 and at most 10m", o.cfg.Duration)
	case o.cfg.Calls < 1:
		return usage("--calls %d: want at least 1", o.cfg.Calls)
	case o.cfg.Pairs < 1 || o.cfg.Pairs > 50:
		return usage("--pairs %d: want 1..50", o.cfg.Pairs)
	case o.cfg.CallTimeout <= 0 || o.cfg.CallTimeout > 5*time.Minute:
		return usage("--call-timeout %v: want more than 0 and at most 5m", o.cfg.CallTimeout)
	case o.cfg.Opens < 1 || o.cfg.Opens > 10000:
		return usage("--opens %d: want 1..10000", o.cfg.Opens)
	case o.cfg.Sessions < 0 || o.cfg.Sessions > 20000:
		return usage("--sessions %d: want 0..20000", o.cfg.Sessions)
	}
	if err := checkBenchFaultFlags(o); err != nil {
		return err
	}
	if o.out != "" {
		if err := checkOutPath("out", o.out, append([]string{o.target.ConfigTemplate}, o.profiles...)...); err != nil {
			return err
		}
	}
	if len(o.revisions) == 0 {
		return usage("--revision: want legacy, modern or both")
	}
	var revs []history.Revision
	for _, r := range o.revisions {
		switch rev := history.Revision(strings.TrimSpace(r)); rev {
		case history.RevisionLegacy, history.RevisionModern:
			revs = append(revs, rev)
		default:
			return usage("--revision %q: want legacy or modern", r)
		}
	}
	targets, err := benchTargets(o)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return usage("find this binary (the fake backends run it): %v", err)
	}
	runtimes.SetChaosBinary(self)
	w := cmd.OutOrStdout()
	ctx := cmd.Context()
	start := time.Now()
	o.cfg.Runtime, o.cfg.Revisions, o.cfg.Progress = runtimes.Process{Binary: self}, revs, w
	set := history.NewResultsSet()
	var startErrs []error
	for i, target := range targets {
		if ctx.Err() != nil {
			set.Interrupted = true
			break
		}
		if len(targets) > 1 {
			fmt.Fprintf(w, "chaos bench: gateway %d of %d: %s (%s)\n", i+1, len(targets), target.Name(), o.profiles[i])
		}
		cfg := o.cfg
		cfg.Target = target
		results, err := bench.Run(ctx, cfg)
		if err != nil && (results == nil || !results.Interrupted) {
			startErrs = append(startErrs, fmt.Errorf("%s: %w", target.Name(), err))
			fmt.Fprintf(w, "chaos bench: %s: %v\n", target.Name(), err)
		}
		if results != nil {
			set.Runs = append(set.Runs, results)
			set.Interrupted = set.Interrupted || results.Interrupted
		}
	}
	switch {
	case len(targets) == 1 && len(set.Runs) == 1:
		printBench(w, set.Runs[0])
	case len(set.Runs) > 0:
		printBenchSide(w, set.Runs)
	}
	if o.out != "" && len(set.Runs) > 0 {
		var err error
		if len(targets) == 1 {
			err = writeResults(set.Runs[0], o.out, true) // bench figures, one file as a set is
		} else {
			err = writeResultsSet(set, o.out)
		}
		if err != nil {
			return fmt.Errorf("bench: write results: %w", err)
		}
		fmt.Fprintf(w, "results: %s\n", o.out)
	}
	fmt.Fprintf(w, "chaos bench: done in %s\n", time.Since(start).Round(time.Millisecond))
	switch {
	case set.Interrupted:
		return &exitError{code: exitInterrupted, err: fmt.Errorf("bench: interrupted (%v)", context.Cause(ctx))}
	case len(startErrs) > 0:
		return usageError(fmt.Errorf("bench: %w", errors.Join(startErrs...)))
	case set.Failed():
		return &exitError{code: exitFailed, err: fmt.Errorf("bench: a scenario failed")}
	}
	return nil
}

// benchTargets builds the gateways under test: one per --profile (the
// exec flags only with a single one), or the one the exec flags describe
// (default: this binary's vmcp). Every profile is read before anything
// starts: a bad one is a usage error naming its file.
func benchTargets(o benchOptions) ([]targets.Target, error) {
	o.target.Kind = "exec"
	if len(o.profiles) > 1 && (o.target.GatewayCmd != "" || o.target.ConfigTemplate != "" || o.target.ReadyURL != "" || o.target.MCPPath != "") {
		return nil, usage("--gateway-cmd, --config-template, --ready-url and --mcp-path override one profile's fields: not with %d --profile", len(o.profiles))
	}
	if len(o.profiles) == 0 {
		target, err := o.target.Target(os.Executable)
		if err != nil {
			return nil, usage("%v", err)
		}
		return []targets.Target{target}, nil
	}
	var out []targets.Target
	for i, p := range o.profiles {
		if slices.Contains(o.profiles[:i], p) {
			return nil, usage("--profile %s given twice", p)
		}
		tc := o.target
		tc.Profile = p
		target, err := tc.Target(os.Executable)
		if err != nil {
			return nil, usage("%v", err)
		}
		out = append(out, target)
	}
	return out, nil
}

// Bounds of the scale figures: at most 8 session counts, and at most 30
// minutes of scale load in all (each count runs --scale-duration).
const (
	maxScaleCounts = 8
	maxScaleLoad   = 30 * time.Minute
)

// checkBenchFaultFlags checks the flags of the error, stall and scale
// figures.
func checkBenchFaultFlags(o benchOptions) error {
	if len(o.cfg.Steps) == 0 {
		return usage("--steps: want some of %s", strings.Join(bench.StepNames, ", "))
	}
	for _, s := range o.cfg.Steps {
		if !slices.Contains(bench.StepNames, s) {
			return usage("--steps %q: want some of %s", s, strings.Join(bench.StepNames, ", "))
		}
	}
	switch {
	case o.cfg.ErrorCalls < 1 || o.cfg.ErrorCalls > 100000:
		return usage("--error-calls %d: want 1..100000", o.cfg.ErrorCalls)
	case o.cfg.StallTimeout <= 0 || o.cfg.StallTimeout > time.Minute:
		return usage("--stall-timeout %v: want more than 0 and at most 1m", o.cfg.StallTimeout)
	case o.cfg.StallCalls < 1 || o.cfg.StallCalls > 1000:
		return usage("--stall-calls %d: want 1..1000", o.cfg.StallCalls)
	case o.cfg.StallDeadline <= o.cfg.StallTimeout || o.cfg.StallDeadline > 10*time.Minute:
		return usage("--stall-deadline %v: want more than --stall-timeout (%v) and at most 10m", o.cfg.StallDeadline, o.cfg.StallTimeout)
	case o.cfg.ScaleDuration <= 0 || o.cfg.ScaleDuration > 10*time.Minute:
		return usage("--scale-duration %v: want more than 0 and at most 10m", o.cfg.ScaleDuration)
	case o.cfg.ScaleRate < 1 || o.cfg.ScaleRate > 100000:
		return usage("--scale-rate %d: want 1..100000", o.cfg.ScaleRate)
	case o.cfg.CrashEvery < 50*time.Millisecond || o.cfg.CrashEvery > 10*time.Minute:
		return usage("--crash-every %v: want 50ms..10m", o.cfg.CrashEvery)
	}
	if n := len(o.cfg.ScaleSessions); n == 0 || n > maxScaleCounts {
		return usage("--scale-sessions: %d counts: want 1 to %d", n, maxScaleCounts)
	}
	for i, n := range o.cfg.ScaleSessions {
		if n < 1 || n > 20000 {
			return usage("--scale-sessions %d: want 1..20000 each", n)
		}
		if slices.Contains(o.cfg.ScaleSessions[:i], n) {
			return usage("--scale-sessions %d: given twice", n)
		}
	}
	if total := time.Duration(len(o.cfg.ScaleSessions)) * o.cfg.ScaleDuration; total > maxScaleLoad {
		return usage("--scale-sessions (%d counts) × --scale-duration %v = %v of load: want at most %v", len(o.cfg.ScaleSessions), o.cfg.ScaleDuration, total, maxScaleLoad)
	}
	return nil
}

// printBench prints each bench scenario's verdict and figures.
func printBench(w io.Writer, results *history.Results) {
	fmt.Fprintln(w)
	for _, s := range results.Scenarios {
		fmt.Fprintf(w, "%-7s %s\n", strings.ToUpper(string(s.Verdict)), s.Name)
		if s.Reason != "" {
			fmt.Fprintf(w, "        %s\n", s.Reason)
		}
		for _, k := range slices.Sorted(maps.Keys(s.Figures)) {
			fmt.Fprintf(w, "        %-34s %.4g\n", k, s.Figures[k])
		}
	}
}
