package scenarios_test

import (
	"context"
	"os"
	"regexp"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// containerParallel is how many container topologies the test runs at
// once (each is four containers on a loaded engine): two, as the suite's
// container lane beside it. With four, two copies of the package at once
// (.ci/load) had twelve topologies on a 2-core engine, which timed out
// creating networks and removing containers.
const containerParallel = 2

// containerRunsEnv, when set, is a regexp that focuses
// TestContainerMutantTable: it runs only the reference runs and the
// (mutant, scenario) pairs whose "mutant × scenario" it matches (the
// reference's as "reference × container-kill/legacy"), e.g.
// 'container-kill/legacy' for the kill rows and the reference's kill run;
// one that matches none fails the test.
const containerRunsEnv = "VMCP_CHAOS_CONTAINER_RUNS"

// containerRunsFilter is containerRunsEnv's filter (nil: every run).
func containerRunsFilter(t *testing.T) func(mutant, scenario string) bool {
	t.Helper()
	expr := os.Getenv(containerRunsEnv)
	if expr == "" {
		return nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		t.Fatalf("%s=%q: %v", containerRunsEnv, expr, err)
	}
	return func(mutant, scenario string) bool { return re.MatchString(mutant + " × " + scenario) }
}

// TestContainerMutantTable runs every (mutant, scenario) pair of
// containerMutantTable and fails unless every check each row covers
// failed; beside them it runs every container scenario against the
// reference and fails unless each records exactly containerChecks (so
// the list TestEveryCheckHasAMutant reads is the catalogue's). It needs
// Docker: it skips saying why without it, and fails then with
// VMCP_CHAOS_REQUIRE_DOCKER=1.
//
// Its runs mostly wait on containers and on calls the mutants hold, so it
// runs beside the package's other tests, in a child process that builds, and removes (TestMain, also on
// SIGINT/SIGTERM), its own image and containers.
func TestContainerMutantTable(t *testing.T) {
	t.Parallel()
	if os.Getenv(mutantChildEnv) != "1" {
		runChild(t, "^TestContainerMutantTable$", mutantChildEnv+"=1")
		return
	}
	mutants := containerMutants()
	pairs := pairsOf(t, containerMutantTable, func(name string) bool { _, ok := mutants[name]; return ok })
	var refs []scenarios.Scenario
	for _, sc := range scenarios.Catalogue() {
		if sc.HasLabel(scenarios.LabelContainer) {
			refs = append(refs, sc)
		}
	}
	if keep := containerRunsFilter(t); keep != nil {
		refs = slices.DeleteFunc(refs, func(sc scenarios.Scenario) bool { return !keep("reference", sc.Name) })
		pairs = slices.DeleteFunc(pairs, func(p *pair) bool { return !keep(p.mutant, p.scenario) })
		if len(refs)+len(pairs) == 0 {
			t.Fatalf("%s=%q matches no run (\"mutant × scenario\", e.g. \"slow-errors-5s × %s\")", containerRunsEnv, os.Getenv(containerRunsEnv), containerKillL)
		}
		t.Logf("%s: %d reference runs, %d mutant pairs", containerRunsEnv, len(refs), len(pairs))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel) // after the parallel subtests
	e, err := containers.Get(ctx)
	if containers.IsSkip(err) {
		t.Skip(err.Error())
	} else if err != nil {
		t.Fatal(err)
	}
	// The image once, before the runs: no run's start pays for its build.
	if _, err := e.Image(ctx); err != nil {
		t.Fatal(err)
	}
	slots := make(chan struct{}, containerParallel)
	run := func(sc scenarios.Scenario, target targets.Target) history.ScenarioResult {
		slots <- struct{}{}
		defer func() { <-slots }()
		return runScenario(ctx, sc, runner.RunConfig{Target: target}).Result()
	}
	start := time.Now()
	t.Run("reference records containerChecks", func(t *testing.T) {
		t.Parallel()
		var wg sync.WaitGroup
		for _, sc := range refs {
			wg.Go(func() {
				res := run(sc, targets.Reference{})
				if res.Verdict == history.VerdictInconclusive { // the harness's part failed (an engine action): no verdict, once more
					t.Logf("%s against the reference came back inconclusive (%s): running it once more", sc.Name, firstLine(res.Reason))
					res = run(sc, targets.Reference{})
				}
				var got []string
				for _, c := range res.Checks {
					got = append(got, c.Name)
				}
				want := slices.Clone(containerChecks(sc.Name))
				sort.Strings(got)
				sort.Strings(want)
				t.Logf("%s against the reference: %s in %s: %s", sc.Name, res.Verdict, res.Duration.D(), firstLine(res.Reason))
				for _, c := range res.Checks {
					if c.Verdict != history.CheckPassed {
						t.Logf("  %s: %s: %s", c.Name, c.Verdict, firstLine(c.Observed))
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s: the reference recorded the checks\n%q\nthe list (containerCheckNames) says\n%q", sc.Name, got, want)
				}
			})
		}
		wg.Wait()
	})
	t.Run("mutants fail their rows", func(t *testing.T) {
		t.Parallel()
		results := make([]history.ScenarioResult, len(pairs))
		var wg sync.WaitGroup
		for i, p := range pairs {
			sc := mutants[p.mutant].scenarioWith(t, p.scenario, p.mutant)
			wg.Go(func() { results[i] = run(sc, targets.Reference{TargetName: "mutant-" + p.mutant}) })
		}
		wg.Wait()
		for i, p := range pairs {
			judgeContainerPair(t, p, results[i])
		}
	})
	t.Cleanup(func() {
		t.Logf("container reference runs and mutant pairs in %s", time.Since(start).Round(time.Millisecond))
	})
}

// judgeContainerPair fails unless every check of p's scenario that a row
// of p covers failed in res.
func judgeContainerPair(t *testing.T, p *pair, res history.ScenarioResult) {
	t.Helper()
	verdicts, failed := verdictsOf(res)
	t.Logf("%s × %s: %s in %s, failed %q: %s", p.mutant, p.scenario, res.Verdict, res.Duration.D(), failed, firstLine(res.Reason))
	for _, r := range p.rows {
		for _, name := range containerChecks(p.scenario) {
			if !r.checks.MatchString(name) {
				continue
			}
			c := verdicts[name]
			t.Logf("  %s: %s: %s", name, c.Verdict, firstLine(c.Observed))
			if c.Verdict != history.CheckFailed {
				t.Errorf("%s × %s: %q is %q, want failed (%s): %s%s", p.mutant, p.scenario, name, c.Verdict, r.why, c.Reason, c.Observed)
			}
		}
	}
}
