package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// runOptions are the flags of `chaos run`.
type runOptions struct {
	// target is the gateway under test: --target, --profile and the exec
	// flags (CapabilitiesSet: --capabilities was given, even empty).
	target targets.TargetConfig
	labels []string
	// scenarios are --scenario's names: the AND with labels.
	scenarios   []string
	out         string
	list        bool
	noLeakCheck bool
	verbose     bool
	parallel    int
	runtime     string
	// output: --html, --no-html, --quiet (see output.go)
	html   string
	noHTML bool
	quiet  bool
	// inlineEvents writes every event in the results file, no event log.
	inlineEvents bool
}

func newRunCmd() *cobra.Command {
	return runCmdWith(func(cmd *cobra.Command, o runOptions) error {
		sweepBefore(cmd, "chaos run", filepath.Dir(o.out), filepath.Dir(o.htmlPath()))
		return runScenarios(cmd, o)
	})
}

// runCmdWith is `chaos run` with its flags, doing run with the options
// they set (tests read the options of a command line through it).
func runCmdWith(run func(*cobra.Command, runOptions) error) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the acceptance scenarios against a vMCP gateway",
		Long: `Run the scenario catalogue (see scenarios/README.md) against a gateway
under test, print progress and a verdict table, and write the JSON results and an HTML
report named after the results (out/results.html beside out/results.json;
--out out/X.json writes out/X.html; see reports/README.md). The findings, one
line per property the gateway failed, are printed above the table.

With no arguments it starts the built-in topology: the reference vMCP
in-process in front of in-process fake backends (and, for the process
scenarios, fake backends as real processes of this binary).

  chaos run                                   # everything, reference gateway
  chaos run --label wrapping --label hang     # only these labels (either)
  chaos run --label 'hang && !process'        # a Ginkgo label filter, as -ginkgo.label-filter
  chaos run --label '!container' --scenario hang/legacy/sse  # a scenario, if the filter matches it
  chaos run --target exec                     # our gateway as a process (chaos vmcp)
  chaos run --profile profiles/chaos-vmcp.yaml # the gateway a target profile describes
  chaos run --target exec --gateway-cmd 'vmcp serve --config {{.ConfigPath}}' \
      --config-template toolhive.yaml.tmpl --ready-url '{{.BaseURL}}/status' \
      --capabilities health-api,breaker
  chaos run --label container                 # backends and gateway as Docker containers
  chaos run --runtime container               # every scenario's HTTP backends in containers

The container scenarios (label container) need a Docker engine (probed for
at most 5 s; without one they are skipped, or fail with
VMCP_CHAOS_REQUIRE_DOCKER=1); they run the target as a container: the
reference and chaos vmcp from an image built locally FROM scratch from this
binary (build it with CGO_ENABLED=0; a dynamically linked one rebuilds itself
only inside the source tree, elsewhere the container scenarios are skipped
saying so), another gateway from --gateway-image. A runtime that cannot start
never ends the run: the scenarios that need it are skipped or fail with the
reason, the others run.

A scenario that needs a capability the target does not declare is reported
skipped with that reason; a pass whose optional checks could not run (e.g.
metrics counters) shows as PASSED*. With per-check results the verdict
counts checks: FAILED 3/11, PASSED 11/11. On SIGINT/SIGTERM the table, the
JSON and the report cover what finished (the rest is listed as not run).

The Ginkgo suite (go test ./scenarios/...) takes the same target choice from
VMCP_CHAOS_TARGET, VMCP_CHAOS_GATEWAY_CMD, VMCP_CHAOS_CONFIG_TEMPLATE,
VMCP_CHAOS_READY_URL, VMCP_CHAOS_MCP_PATH, VMCP_CHAOS_CAPABILITIES,
VMCP_CHAOS_GATEWAY_IMAGE and VMCP_CHAOS_RUNTIME, and --parallel from
VMCP_CHAOS_PARALLEL.

` + exitHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.target.CapabilitiesSet = cmd.Flags().Changed("capabilities")
			if o.target.Profile != "" && !cmd.Flags().Changed("target") {
				o.target.Kind = "" // a profile is an exec target
			}
			return run(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.target.Kind, "target", "reference", "gateway under test: reference (in-process) or exec (a gateway process)")
	f.StringVar(&o.target.GatewayCmd, "gateway-cmd", "", "exec: the gateway's command line, split into words like a shell does ('single' and \"double\" quotes, "+
		"backslash escapes, no expansion); each word is a template ({{.ConfigPath}}, {{.Listen}}, {{.Port}}, ...); needs --config-template; "+
		"default: this binary's 'vmcp --config {{.ConfigPath}} --listen {{.Listen}}'")
	f.StringVar(&o.target.ConfigTemplate, "config-template", "", "exec: the gateway's config file template (required with --gateway-cmd; default for chaos vmcp: the shipped template)")
	f.StringVar(&o.target.ReadyURL, "ready-url", "", "exec: URL template polled until the gateway answers (default {{.BaseURL}}/status for chaos vmcp, else {{.BaseURL}}<mcp-path>)")
	f.StringVar(&o.target.MCPPath, "mcp-path", "", "exec: the gateway's MCP endpoint path (default /mcp, or the profile's)")
	f.StringVar(&o.target.Profile, "profile", "", "a target profile (YAML) describing the gateway under test: an exec target; "+
		"--gateway-cmd, --config-template, --ready-url, --mcp-path, --capabilities and --tool-names override its fields, --gateway-image gives its image (see chaos profile check; $"+targets.ProfileEnv+")")
	f.StringVar(&o.target.Capabilities, "capabilities", "", "capabilities the target declares, comma-separated ("+
		strings.ReplaceAll(targets.AllCapabilities.String(), ",", ", ")+", or all); default: the reference gateway's for reference and chaos vmcp, none for another exec gateway")
	f.StringVar(&o.target.ToolNamePattern, "tool-names", "", "how the gateway names a backend's tools and prompts, a pattern of {backend} and {tool} "+
		"(default {backend}_{tool}; $"+targets.ToolNamesEnv+"); tools are found by their origin marker first, the pattern is the fallback")
	f.StringArrayVar(&o.labels, "label", nil, "run only the scenarios matching this Ginkgo label filter (the syntax of -ginkgo.label-filter: "+
		"&&, ||, !, parentheses, a comma for ||) or named so; repeatable (either matches). Labels: "+strings.Join(scenarios.Labels(), ", "))
	f.StringArrayVar(&o.scenarios, "scenario", nil, "run only the scenarios named so (full names, e.g. hang/legacy/sse; comma-separated or repeatable: either), "+
		"of those --label selects (both must match; the reproduce command of a finding is the run's own filters and --scenario)")
	f.StringVar(&o.out, "out", filepath.Join("out", "results.json"), "write the JSON results here: every check with its evidence calls, faults and state changes; "+
		"the complete event log (every call) beside it, out/X.events.json for out/X.json (chaos report reads both)")
	f.BoolVar(&o.inlineEvents, "inline-events", false, "write the complete event log inside the results file, as one (larger) file, instead of beside it")
	f.BoolVar(&o.list, "list", false, "list the scenarios (after --label), with the capabilities they need, the gateway features they render into its config, "+
		"and their checks not applicable to the target, and exit")
	f.BoolVar(&o.noLeakCheck, "no-leak-check", false, "do not fail scenarios that leave goroutines running")
	f.IntVar(&o.parallel, "parallel", runner.DefaultParallel(), "run up to this many scenarios at once, each with its own topology (the load scenario first and alone; then up to this many in-process scenarios and, beside them, container scenarios up to the host's container slots ($"+runner.ContainerSlotsEnv+", default 3) or this many if more, longest first; "+
		"1 to 16; default: one per core, at most 4)")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "print with each scenario its full reason, failed checks and key figures")
	f.StringVar(&o.html, "html", "", "write the HTML report here (default: --out with .html for .json, i.e. out/results.html)")
	f.BoolVar(&o.noHTML, "no-html", false, "do not write the HTML report")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print no progress and no table, only the final summary line")
	f.StringVar(&o.runtime, "runtime", "", "backend runtime: container runs every scenario's HTTP backends as Docker containers (default: each scenario's own)")
	f.StringVar(&o.target.Image, "gateway-image", "", "exec: a container image of the gateway, for the container scenarios (runs --gateway-cmd with the rendered config)")
	return cmd
}

// runTarget builds the target from the flags (the same rules as the
// Ginkgo suite's VMCP_CHAOS_* variables: targets.TargetConfig). With
// --profile it is the profile's gateway, with the exec flags as
// overrides, and a bad profile is a config error.
func runTarget(cfg targets.TargetConfig) (targets.Target, error) {
	t, err := cfg.Target(os.Executable)
	if pe := (*targets.ProfileError)(nil); errors.As(err, &pe) {
		return nil, fmt.Errorf("run: --profile: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	return t, nil
}

func runScenarios(cmd *cobra.Command, o runOptions) error {
	if err := o.checkOutput(); err != nil {
		return usageError(err)
	}
	if o.parallel < 1 || o.parallel > 16 {
		return usageError(fmt.Errorf("run: --parallel %d: want 1 to 16", o.parallel))
	}
	target, err := runTarget(o.target)
	if err != nil {
		return usageError(err)
	}
	runtime, err := runner.ParseRuntime(o.runtime)
	if err != nil {
		return usageError(fmt.Errorf("run: --runtime: %w", err))
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := containers.ShutdownDefault(ctx); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "chaos run: remove the run's containers: %v\n", err)
		}
	}()
	selected, err := selectScenarios(o)
	if err != nil {
		return usageError(err)
	}
	w := cmd.OutOrStdout()
	if o.list {
		return printList(w, selected, target)
	}
	// Process backends are this very binary (`chaos backend`).
	if self, err := os.Executable(); err == nil {
		runtimes.SetChaosBinary(self)
	}

	if !o.quiet {
		fmt.Fprintf(w, "chaos run: %d scenarios against %s\ncapabilities: %s\n", len(selected), target.Name(), target.Capabilities())
	}
	results := harness.NewResults(target)
	results.Rerun = rerunCommand(o)
	start := time.Now()
	// A runtime that cannot be prepared never ends the run: the scenarios
	// that need it are skipped or fail with the reason, the others run.
	// Interrupted while preparing, the loop below lists every scenario as
	// not run, and the results and report say so.
	if msg := runner.PrepareContainers(cmd.Context(), selected, runtime); msg != "" && !o.quiet {
		fmt.Fprintln(w, msg)
	}
	progress := newProgress(w, len(selected), o.quiet, o.verbose)
	ctx := cmd.Context()
	cut := 0                        // scenarios an interruption cut short or kept from running
	starts := &targets.StartGuard{} // a gateway that cannot start is waited for twice, not per scenario
	cfg := runner.RunConfig{Target: target, CheckLeaks: !o.noLeakCheck, Runtime: runtime, Starts: starts}
	recs := runner.RunPool(ctx, selected, cfg, o.parallel, func(_ int, rec *history.Recorder) {
		if ctx.Err() != nil {
			if r := rec.Result(); r.Verdict != history.VerdictSkipped {
				// Not "overran its timeout": the signal cut it short.
				rec.SetVerdict(history.VerdictInterrupted, fmt.Sprintf("interrupted (%v) after %s", context.Cause(ctx), r.Duration.D().Round(time.Millisecond)))
				cut++
			}
		}
		progress(rec.Result())
	})
	for i, rec := range recs {
		if rec == nil {
			// Interrupted before it started: listed as not run.
			rec = history.NewRecorder(selected[i].Name, selected[i].Labels...)
			rec.Skip("not run: the run was interrupted")
			cut++
		}
		results.Add(rec)
	}
	if ctx.Err() != nil {
		results.Interrupted = true
	}
	return finishRun(w, o, results, start, fmt.Errorf("interrupted (%v); %d scenario(s) did not finish", context.Cause(ctx), cut))
}

// selectScenarios is the run's selection: the scenarios --label selects
// (all without one), narrowed to --scenario's names; none is an error.
func selectScenarios(o runOptions) ([]scenarios.Scenario, error) {
	all := scenarios.Catalogue()
	selected, err := scenarios.Select(all, o.labels...)
	if err != nil {
		return nil, fmt.Errorf("run: --label: %w", err)
	}
	if len(selected) == 0 {
		return nil, fmt.Errorf("run: no scenario has label %s (labels: %s)", strings.Join(o.labels, " or "), strings.Join(scenarios.Labels(), ", "))
	}
	if selected, err = scenarios.Narrow(all, selected, o.scenarios...); err != nil {
		return nil, fmt.Errorf("run: --scenario: %w", err)
	}
	if len(selected) == 0 {
		return nil, fmt.Errorf("run: --label %s selects none of --scenario %s", strings.Join(o.labels, " or "), strings.Join(o.scenarios, ","))
	}
	return selected, nil
}
