package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
)

func newProfileCmd() *cobra.Command {
	return groupCmd("profile", "Work with target profiles (YAML files describing a gateway under test)",
		`A target profile describes a gateway under test: how to start it, where
its MCP endpoint and admin APIs are, how it names tools and what it offers.
See README.md, "Judge your own gateway: writing a profile", and profiles/.`,
		newProfileCheckCmd())
}

func newProfileCheckCmd() *cobra.Command {
	var timeout time.Duration
	var suggest bool
	cmd := &cobra.Command{
		Use:   "check FILE",
		Short: "Start the profile's gateway and report what works, and whether it takes every config the scenarios render",
		Long: `Check a target profile before a long run: load it strictly (an error names
file:line: field), start the gateway once in front of two fake backends
(alpha on streamable HTTP, beta on SSE; health monitor, breaker, keepalive
and metrics on as far as the profile declares them) and report:

  start          the gateway started and was ready (ready.url, ready.tools)
  tools found    every backend's tools in tools/list (by origin marker, or
                 by the toolNames pattern), and a call to each
  health-api     the health API read, a status for every backend
  breaker state  a circuit state for every backend
  session-api    the session API read for the check's session
  metrics        GET /metrics serves Prometheus text
  keepalive      the backend sees the keepalive pings asked for
  optimizer      (a second start) tools/list shows find_tool and call_tool
  advertised     what the gateway offers at initialize (tools, resources,
                 prompts); resources and prompts read and got through it
  config: F      one more start per distinct feature set F the scenarios
                 will render into its config (chaos run --list shows them:
                 e.g. the breaker scenario asks for breaker and metrics),
                 so a config the gateway refuses fails here, with the
                 gateway's own message, not in the middle of chaos run

With --suggest it learns the facts instead, whatever the profile declares,
prints each with the profile line it implies and what it will do to a run,
and writes the corrected profile beside FILE (gw.yaml: gw.suggested.yaml):

  tool names          from where the backends' tools show (origin markers)
  methods             the families advertised and answered
  backend transports  beta started on SSE and on stdio too
  protocol revisions  the revision agreed with each client revision
  call timeout        how long a call stalled at beta takes to answer
  recovery            how long beta's tools take to come back after a restart
  capabilities        those whose checks pass when all are asked for

Exit status: 0 everything declared works (--suggest: the suggested profile
was written and loads), 1 something declared does not (--suggest: the
gateway did not start, or the suggestion does not load), 2 the profile is
bad (or the arguments are), 130 interrupted.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout < time.Second || timeout > time.Hour {
				return usageError(fmt.Errorf("profile check: --timeout %s: want 1s to 1h, such as 2m", timeout))
			}
			sweepBefore(cmd, "chaos profile check")
			if suggest && !cmd.Flags().Changed("timeout") {
				timeout = 5 * time.Minute
			}
			return profileCheck(cmd, args[0], timeout, suggest)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "bound on the whole check (default 5m with --suggest)")
	cmd.Flags().BoolVar(&suggest, "suggest", false, "learn the gateway's facts, print each with the profile line it implies, and write the corrected profile beside FILE (FILE.suggested.yaml)")
	return cmd
}

func profileCheck(cmd *cobra.Command, file string, timeout time.Duration, suggest bool) error {
	w := cmd.OutOrStdout()
	p, err := targets.LoadProfile(file)
	if err != nil {
		return usageError(err)
	}
	target, err := targets.TargetConfig{Profile: file}.Target(os.Executable)
	if err != nil {
		return usageError(err)
	}
	caps, _ := p.Caps()
	fmt.Fprintf(w, "profile %s: gateway %s, capabilities [%s], tool names %q, ready.tools %v\n",
		file, p.Name, caps, cmp.Or(p.ToolNames, targets.DefaultToolNamePattern), p.ReadyTools())
	ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
	defer cancel()
	progress := func(s string) { fmt.Fprintln(w, "  ...", s) }
	// Stdio backends (--suggest tries one) are processes of this binary.
	if self, err := os.Executable(); err == nil {
		runtimes.SetChaosBinary(self)
	}
	if suggest {
		return profileSuggest(ctx, cmd, file, p, target, progress)
	}
	checks := harness.CheckTarget(ctx, target, progress)
	if ctx.Err() == nil {
		checks = append(checks, harness.CheckFeatureSets(ctx, target, scenarios.FeatureSets(scenarios.Catalogue(), target), progress)...)
	}
	failed := printChecks(w, checks)
	switch {
	case cmd.Context().Err() != nil:
		return &exitError{code: exitInterrupted, err: fmt.Errorf("profile check interrupted (%v)", context.Cause(cmd.Context()))}
	case failed > 0:
		fmt.Fprintf(w, "chaos profile check --suggest %s measures what the gateway does and writes the profile it implies\n", file)
		return &exitError{code: exitFailed, err: fmt.Errorf("profile %s: %d check(s) failed", file, failed)}
	}
	fmt.Fprintf(w, "profile %s: everything declared works\n", file)
	return nil
}

// printChecks prints the checks as a table and returns how many failed.
func printChecks(w io.Writer, checks []harness.ProfileCheck) int {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tRESULT\tDETAIL")
	failed := 0
	for _, c := range checks {
		if c.Status == history.CheckFailed {
			failed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, strings.ToUpper(strings.ReplaceAll(string(c.Status), "_", " ")), strings.ReplaceAll(c.Detail, "\n", " "))
	}
	_ = tw.Flush()
	return failed
}

// profileSuggest is `chaos profile check --suggest`: learn the facts,
// print them with the profile lines they imply, write the suggestion.
func profileSuggest(ctx context.Context, cmd *cobra.Command, file string, p *targets.Profile, target targets.Target, progress func(string)) error {
	w := cmd.OutOrStdout()
	e, ok := target.(targets.Exec)
	if !ok {
		return usageError(fmt.Errorf("profile check --suggest: %s is not an exec target", file))
	}
	checks, facts := harness.LearnFacts(ctx, e, progress)
	declared, _ := p.Caps()
	timeouts := countTimeoutChecks(scenarios.Catalogue(), suggestedTarget(e, facts, declared))
	facts.Timeout = &timeouts
	fmt.Fprintln(w, "What the gateway did with every capability asked for (not what the profile declares):")
	printChecks(w, checks)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "FACTS (what chaos run will meet)")
	lines := facts.Lines()
	for _, l := range lines {
		fmt.Fprintf(w, "%s: %s\n    profile: %s\n    in the run: %s\n", l.Fact, cmp.Or(l.Seen, "-"), l.Line(), l.Effect)
	}
	if cmd.Context().Err() != nil {
		return &exitError{code: exitInterrupted, err: fmt.Errorf("profile check interrupted (%v)", context.Cause(cmd.Context()))}
	}
	if facts.ToolNames == "" {
		return &exitError{code: exitFailed, err: fmt.Errorf("profile %s: the backends' tools were not found through the gateway: no profile to suggest", file)}
	}
	path, err := writeSuggested(file, lines, declared)
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	fmt.Fprintf(w, "\nwrote %s: check it, then chaos profile check %s and chaos run --profile %s\n", path, path, path)
	return nil
}

// suggestedTarget is e as its suggested profile declares it (what chaos
// run --profile FILE.suggested.yaml runs): the capabilities, backend
// transports and methods measured, a declared reinit-on-404 kept.
func suggestedTarget(e targets.Exec, f harness.Facts, declared targets.Capabilities) targets.Exec {
	e.Caps = slices.Clone(f.Caps)
	if declared.Has(targets.CapReinitOn404) {
		e.Caps = append(e.Caps, targets.CapReinitOn404)
	}
	e.Transports, e.Methods = nil, nil
	for _, tr := range targets.TransportNames {
		if why, ok := f.Transports[tr]; ok && why == "" {
			e.Transports = append(e.Transports, tr)
		}
	}
	if len(e.Transports) == len(targets.TransportNames) {
		e.Transports = nil
	}
	if len(f.Served) < len(targets.MethodFamilies) {
		e.Methods = targets.Methods(slices.Clone(f.Served))
	}
	return e
}
