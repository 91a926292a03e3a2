package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/containers"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
)

// runOptions are the flags of `chaos run`.
type runOptions struct {
	target         string
	gatewayCmd     string
	configTemplate string
	readyURL       string
	mcpPath        string
	capabilities   string
	// capabilitiesSet: --capabilities was given (even empty: none).
	capabilitiesSet bool
	labels          []string
	out             string
	list            bool
	noLeakCheck     bool
	verbose         bool
	runtime         string
	gatewayImage    string
}

func newRunCmd() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the acceptance scenarios against a vMCP gateway",
		Long: `Run the scenario catalogue (see scenarios/README.md) against a gateway
under test, print a verdict table and write the JSON results.

With no arguments it starts the built-in topology: the reference vMCP
in-process in front of in-process fake backends (and, for the process
scenarios, fake backends as real processes of this binary).

  chaos run                                   # everything, reference gateway
  chaos run --label wrapping --label hang     # only these labels
  chaos run --target exec                     # our gateway as a process (chaos vmcp)
  chaos run --target exec --gateway-cmd 'vmcp serve --config {{.ConfigPath}}' \
      --config-template toolhive.yaml.tmpl --ready-url '{{.BaseURL}}/status' \
      --capabilities health-api,breaker
  chaos run --label container                 # backends and gateway as Docker containers
  chaos run --runtime container               # every scenario's HTTP backends in containers

The container scenarios (label container) need a Docker engine (probed for
at most 5 s; without one they are skipped, or fail with
VMCP_CHAOS_REQUIRE_DOCKER=1); they run the target as a container: the
reference and chaos vmcp from an image built locally FROM scratch, another
gateway from --gateway-image.

A scenario that needs a capability the target does not declare is reported
skipped with that reason; a pass whose optional checks could not run (e.g.
metrics counters) shows as PASSED*. The exit status is 1 when a scenario
failed. On SIGINT/SIGTERM the table and the JSON cover what finished (the
rest is listed as not run) and the exit status is 130.

The Ginkgo suite (go test ./scenarios/...) takes the same target choice from
VMCP_CHAOS_TARGET, VMCP_CHAOS_GATEWAY_CMD, VMCP_CHAOS_CONFIG_TEMPLATE,
VMCP_CHAOS_READY_URL, VMCP_CHAOS_MCP_PATH, VMCP_CHAOS_CAPABILITIES,
VMCP_CHAOS_GATEWAY_IMAGE and VMCP_CHAOS_RUNTIME.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.capabilitiesSet = cmd.Flags().Changed("capabilities")
			return runScenarios(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.target, "target", "reference", "gateway under test: reference (in-process) or exec (a gateway process)")
	f.StringVar(&o.gatewayCmd, "gateway-cmd", "", "exec: the gateway's command line, split into words like a shell does ('single' and \"double\" quotes, "+
		"backslash escapes, no expansion); each word is a template ({{.ConfigPath}}, {{.Listen}}, {{.Port}}, ...); needs --config-template; "+
		"default: this binary's `vmcp --config {{.ConfigPath}} --listen {{.Listen}}`")
	f.StringVar(&o.configTemplate, "config-template", "", "exec: the gateway's config file template (required with --gateway-cmd; default for chaos vmcp: the shipped template)")
	f.StringVar(&o.readyURL, "ready-url", "", "exec: URL template polled until the gateway answers (default {{.BaseURL}}/status for chaos vmcp, else {{.BaseURL}}<mcp-path>)")
	f.StringVar(&o.mcpPath, "mcp-path", "/mcp", "exec: the gateway's MCP endpoint path")
	f.StringVar(&o.capabilities, "capabilities", "", "capabilities the target declares, comma-separated ("+
		capList()+", or all); default: the reference gateway's for reference and chaos vmcp, none for another exec gateway")
	f.StringSliceVar(&o.labels, "label", nil, "run only scenarios with this label (repeatable or comma-separated): "+strings.Join(scenarios.Labels(), ", "))
	f.StringVar(&o.out, "out", filepath.Join("out", "results.json"), "write the JSON results here")
	f.BoolVar(&o.list, "list", false, "list the scenarios (after --label) and exit")
	f.BoolVar(&o.noLeakCheck, "no-leak-check", false, "do not fail scenarios that leave goroutines running")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "print each scenario as it ends, with the full failure reason")
	f.StringVar(&o.runtime, "runtime", "", "backend runtime: container runs every scenario's HTTP backends as Docker containers (default: each scenario's own)")
	f.StringVar(&o.gatewayImage, "gateway-image", "", "exec: a container image of the gateway, for the container scenarios (runs --gateway-cmd with the rendered config)")
	return cmd
}

func capList() string {
	names := make([]string, len(harness.AllCapabilities))
	for i, c := range harness.AllCapabilities {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// runTarget builds the target from the flags (the same rules as the
// Ginkgo suite's VMCP_CHAOS_* variables: harness.TargetConfig).
func runTarget(o runOptions) (harness.Target, error) {
	cfg := harness.TargetConfig{Kind: o.target, GatewayCmd: o.gatewayCmd, ConfigTemplate: o.configTemplate,
		ReadyURL: o.readyURL, MCPPath: o.mcpPath, Capabilities: o.capabilities, CapabilitiesSet: o.capabilitiesSet,
		Image: o.gatewayImage}
	t, err := cfg.Target(os.Executable)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	return t, nil
}

func runScenarios(cmd *cobra.Command, o runOptions) error {
	target, err := runTarget(o)
	if err != nil {
		return err
	}
	runtime, err := scenarios.ParseRuntime(o.runtime)
	if err != nil {
		return fmt.Errorf("run: --runtime: %w", err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := containers.ShutdownDefault(ctx); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "chaos run: remove the run's containers: %v\n", err)
		}
	}()
	var labels []string
	for _, l := range o.labels {
		if l = strings.TrimSpace(l); l != "" {
			labels = append(labels, l)
		}
	}
	selected := scenarios.Filter(scenarios.Catalogue(), labels...)
	if len(selected) == 0 {
		return fmt.Errorf("run: no scenario has label %s (labels: %s)", strings.Join(labels, ", "), strings.Join(scenarios.Labels(), ", "))
	}
	w := cmd.OutOrStdout()
	if o.list {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SCENARIO\tLABELS\tNEEDS")
		for _, s := range selected {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, strings.Join(s.Labels, ","), harness.Capabilities(s.Needs))
		}
		return tw.Flush()
	}
	// Process backends are this very binary (`chaos backend`).
	if self, err := os.Executable(); err == nil {
		harness.SetChaosBinary(self)
	}

	fmt.Fprintf(w, "chaos run: %d scenarios against %s (capabilities: %s)\n", len(selected), target.Name(), target.Capabilities())
	if msg, err := scenarios.PrepareContainers(cmd.Context(), selected, runtime); err != nil {
		return fmt.Errorf("run: %w", err)
	} else if msg != "" {
		fmt.Fprintln(w, msg)
	}
	results := harness.NewResults(target)
	start := time.Now()
	ctx := cmd.Context()
	for i, sc := range selected {
		if ctx.Err() != nil {
			// Interrupted: list what did not run, then report what did.
			results.Interrupted = true
			for _, rest := range selected[i:] {
				rec := harness.NewRecorder(rest.Name, rest.Labels...)
				rec.Skip("not run: the run was interrupted")
				results.Add(rec)
			}
			break
		}
		rec := scenarios.Run(ctx, sc, scenarios.RunConfig{Target: target, CheckLeaks: !o.noLeakCheck, Runtime: runtime})
		if ctx.Err() != nil {
			results.Interrupted = true
			r := rec.Result()
			if r.Verdict != harness.VerdictSkipped {
				rec.SetVerdict(harness.VerdictFailed, "interrupted while running: "+r.Reason)
			}
		}
		results.Add(rec)
		if o.verbose {
			r := rec.Result()
			fmt.Fprintf(w, "%-7s %s (%s)\n", verdictText(r), r.Name, r.Duration.D().Round(time.Millisecond))
			for _, why := range append([]string{r.Reason}, r.SkippedChecks...) {
				if why != "" {
					fmt.Fprintf(w, "        %s\n", strings.ReplaceAll(why, "\n", "\n        "))
				}
			}
		}
	}
	fmt.Fprintln(w)
	printTable(w, results)
	var writeErr error
	if o.out != "" {
		if dir := filepath.Dir(o.out); dir != "" {
			writeErr = os.MkdirAll(dir, 0o755)
		}
		if writeErr == nil {
			writeErr = results.WriteFile(o.out)
		}
		if writeErr != nil {
			writeErr = fmt.Errorf("run: write results: %w", writeErr)
		}
	}
	counts := map[harness.Verdict]int{}
	partial := 0
	for _, s := range results.Scenarios {
		counts[s.Verdict]++
		if s.Partial() {
			partial++
		}
	}
	fmt.Fprintf(w, "\n%d passed", counts[harness.VerdictPassed])
	if partial > 0 {
		fmt.Fprintf(w, " (%d with checks skipped)", partial)
	}
	fmt.Fprintf(w, ", %d failed, %d skipped in %s", counts[harness.VerdictFailed],
		counts[harness.VerdictSkipped], time.Since(start).Round(time.Millisecond))
	if o.out != "" && writeErr == nil {
		fmt.Fprintf(w, "; results: %s", o.out)
	}
	fmt.Fprintln(w)
	switch {
	case writeErr != nil:
		return writeErr
	case results.Interrupted:
		return &exitError{code: 130, err: fmt.Errorf("interrupted (%v); %d scenario(s) did not finish", context.Cause(ctx), countInterrupted(results))}
	case results.Failed():
		return &exitError{code: 1, err: fmt.Errorf("%d scenario(s) failed", counts[harness.VerdictFailed])}
	}
	return nil
}

// countInterrupted counts the scenarios an interruption cut short or
// kept from running.
func countInterrupted(results *harness.Results) int {
	n := 0
	for _, s := range results.Scenarios {
		if strings.HasPrefix(s.Reason, "not run: the run was interrupted") || strings.HasPrefix(s.Reason, "interrupted while running") {
			n++
		}
	}
	return n
}

// verdictText is the verdict as the table shows it: PASSED*, with an
// asterisk, when some of the scenario's checks were skipped.
func verdictText(s harness.ScenarioResult) string {
	v := strings.ToUpper(string(s.Verdict))
	if s.Partial() {
		v += "*"
	}
	return v
}

// printTable prints one row per scenario: name, verdict, duration, key
// figures, and the reason of a failure or skip (first line), or the checks
// a passed scenario skipped (verdict PASSED*).
func printTable(w io.Writer, results *harness.Results) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tVERDICT\tTIME\tKEY FIGURES\tREASON")
	partial := false
	for _, s := range results.Scenarios {
		reason := s.Reason
		if s.Partial() {
			partial = true
			reason = "checks skipped: " + strings.Join(s.SkippedChecks, "; ")
		}
		if i := strings.IndexByte(reason, '\n'); i >= 0 {
			reason = reason[:i]
		}
		if len(reason) > 120 {
			reason = reason[:117] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, verdictText(s),
			s.Duration.D().Round(time.Millisecond), keyFigures(s.Figures), reason)
	}
	_ = tw.Flush()
	if partial {
		fmt.Fprintln(w, "PASSED*: passed, but some checks did not run (the target lacks the capability they need)")
	}
}

// keyFigures summarizes a scenario's figures: the largest time to error,
// failed calls after restarts, load counts and latency, or else the first
// few figures.
func keyFigures(figs map[string]float64) string {
	if len(figs) == 0 {
		return "-"
	}
	var parts []string
	isStall := func(k string) bool { return strings.Contains(k, "stall") || strings.Contains(k, "timeout") }
	maxOf := func(prefix string, keep func(string) bool) (string, float64, bool) {
		var key string
		var best float64
		found := false
		for k, v := range figs {
			if strings.HasPrefix(k, prefix) && keep(k) && (!found || v > best) {
				key, best, found = k, v, true
			}
		}
		return strings.TrimPrefix(key, prefix), best, found
	}
	if k, v, ok := maxOf("time_to_error_ms.", func(k string) bool { return !isStall(k) }); ok {
		parts = append(parts, fmt.Sprintf("time to error max %.1fms (%s)", v, k))
	}
	if k, v, ok := maxOf("time_to_error_ms.", isStall); ok {
		parts = append(parts, fmt.Sprintf("stall to error max %.0fms (%s)", v, k))
	}
	if _, v, ok := maxOf("failed_calls_after_", func(string) bool { return true }); ok {
		parts = append(parts, fmt.Sprintf("max failed calls after restart/recovery %.0f", v))
	}
	for _, k := range []string{"calls", "calls_failed", "latency_p99_ms", "latency_max_ms", "cancel_return_ms", "backend_cancelled_ms",
		"time_to_open_ms", "open_fail_fast_max_ms", "time_to_close_ms", "probe_interval_ms.min", "probe_interval_ms.max", "find_tool_ms"} {
		if v, ok := figs[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %s", k, trimFloat(v)))
		}
	}
	if len(parts) == 0 {
		keys := make([]string, 0, len(figs))
		for k := range figs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys[:min(3, len(keys))] {
			parts = append(parts, fmt.Sprintf("%s %s", k, trimFloat(figs[k])))
		}
	}
	return strings.Join(parts, "; ")
}

func trimFloat(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.1f", v)
}
