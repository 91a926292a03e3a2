package main

import (
	"slices"
	"testing"

	"github.com/spf13/cobra"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// runOptionsOf parses a `chaos run` command line (without "chaos run")
// as the CLI does, without running anything.
func runOptionsOf(t *testing.T, args []string) runOptions {
	t.Helper()
	var got *runOptions
	cmd := runCmdWith(func(_ *cobra.Command, o runOptions) error { got = &o; return nil })
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); err != nil || got == nil {
		t.Fatalf("chaos run %q: %v", args, err)
	}
	return *got
}

func selectionOf(t *testing.T, o runOptions) []string {
	t.Helper()
	sel, err := selectScenarios(o)
	if err != nil {
		t.Fatalf("select %q %q: %v", o.labels, o.scenarios, err)
	}
	var names []string
	for _, s := range sel {
		names = append(names, s.Name)
	}
	return names
}

// TestReproduceCarriesEveryFilter: the reproduce command of a finding
// carries every filter of the run (each --label as given, the target's
// flags) and selects exactly the finding's scenario of the run's
// selection; the run's rerun command alone selects the run's scenarios
// again. The commands are split as a shell does and parsed by chaos run.
func TestReproduceCarriesEveryFilter(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--label", "!container"},
		{"--label", "!container", "--scenario", "hang/legacy/sse,wrapping/modern/streamable-http"},
		{"--label", "hang && !process", "--label", "breaker", "--profile", "profiles/chaos-vmcp.yaml"},
		{"--label", "(session || restart) && legacy", "--target", "exec", "--config-template", "my dir/gw's.tmpl", "--capabilities", "", "--runtime", "container"},
		{"--scenario", "load/legacy/streamable-http", "--no-leak-check"},
	} {
		o := runOptionsOf(t, args)
		run := selectionOf(t, o)
		rerun := rerunCommand(o)
		words, err := targets.SplitCommand(rerun)
		if err != nil || len(words) < 2 || words[0] != "chaos" || words[1] != "run" {
			t.Fatalf("%q: rerun %q: %v", args, rerun, err)
		}
		again := runOptionsOf(t, words[2:])
		if rerunCommand(again) != rerun {
			t.Errorf("%q: the rerun command %q parses to another run: %q", args, rerun, rerunCommand(again))
		}
		if len(o.scenarios) == 0 && !slices.Equal(selectionOf(t, again), run) {
			t.Errorf("%q: rerun %q selects %v, the run selected %v", args, rerun, selectionOf(t, again), run)
		}
		for _, name := range []string{run[0], run[len(run)/2], run[len(run)-1]} {
			res := &history.Results{Rerun: rerun, Scenarios: []history.ScenarioResult{{Name: name, Verdict: history.VerdictFailed,
				Checks: []history.Check{{Name: "stall: fails within call timeout + 1 s", Verdict: history.CheckFailed, Property: history.PropBounded}}}}}
			f := history.BuildFindings(res)
			if len(f) != 1 {
				t.Fatalf("%d findings", len(f))
			}
			words, err := targets.SplitCommand(f[0].Reproduce)
			if err != nil || len(words) < 2 || words[0] != "chaos" || words[1] != "run" {
				t.Fatalf("reproduce %q: %v", f[0].Reproduce, err)
			}
			rep := runOptionsOf(t, words[2:])
			if got := selectionOf(t, rep); !slices.Equal(got, []string{name}) {
				t.Errorf("%q: reproduce %q selects %v, want %s alone", args, f[0].Reproduce, got, name)
			}
			if !slices.Equal(rep.labels, o.labels) || rerunCommand(rep) != rerun {
				t.Errorf("%q: reproduce %q drops the run's filters or target: labels %q, want %q", args, f[0].Reproduce, rep.labels, o.labels)
			}
		}
	}
	// A scenario the run's filters left out is not selected by adding
	// its name: --scenario is an AND.
	if _, err := selectScenarios(runOptionsOf(t, []string{"--label", "hang && modern", "--scenario", "hang/legacy/sse"})); err == nil {
		t.Error("--label 'hang && modern' --scenario hang/legacy/sse selected something")
	}
}
