package scenarios_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// referenceRun is the catalogue (but the container scenarios) run once
// against the reference, shared by the tests that need every check name:
// TestEveryCheckHasAProperty, TestEveryCheckHasAMutant, TestMutantTable.
var referenceRun struct {
	once sync.Once
	res  *history.Results
	err  error
}

// referenceResults runs the catalogue (but the container scenarios)
// against the reference, DefaultParallel at a time, once per test binary,
// and returns the results with their findings.
func referenceResults(t *testing.T) *history.Results {
	t.Helper()
	referenceRun.once.Do(func() {
		// The process scenarios run this module's chaos binary: build it
		// here, so no scenario's timeout pays for a compile under load
		// (TestMain removes it).
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if _, err := runtimes.BuildChaos(ctx); err != nil {
			referenceRun.err = err
			return
		}
		var scs []scenarios.Scenario
		for _, sc := range scenarios.Catalogue() {
			if !sc.HasLabel(scenarios.LabelContainer) {
				scs = append(scs, sc)
			}
		}
		res := harness.NewResults(targets.Reference{})
		start := time.Now()
		for i, rec := range runShared(t, targets.Reference{}, scs...) { // the Ginkgo suite reports these runs
			// As the suite's spec does (runSpec): a run the machine was
			// too slow to judge runs once more, and that run is the
			// reference's.
			res.Add(againIfInconclusive(t, context.Background(), scs[i], runner.RunConfig{Target: targets.Reference{}, CheckLeaks: true}, rec))
		}
		res.Findings = history.BuildFindings(res)
		t.Logf("the reference ran %d scenarios in %s", len(res.Scenarios), time.Since(start).Round(time.Millisecond))
		referenceRun.res = res
	})
	if referenceRun.err != nil {
		t.Fatal(referenceRun.err)
	}
	if referenceRun.res == nil {
		t.Fatal("the reference's run ended early in another test")
	}
	return referenceRun.res
}

// referenceChecks is, per scenario, the names of the checks the
// reference's run recorded.
func referenceChecks(t *testing.T) map[string][]string {
	out := map[string][]string{}
	for _, s := range referenceResults(t).Scenarios {
		for _, c := range s.Checks {
			out[s.Name] = append(out[s.Name], c.Name)
		}
	}
	return out
}

// referenceNotApplicable is the set of scenario+"\x00"+check the
// reference's run judged not applicable: a mutant of the reference
// cannot fail those (the initialize path of a gateway that keeps its
// backend sessions open).
func referenceNotApplicable(t *testing.T) map[string]bool {
	out := map[string]bool{}
	for _, s := range referenceResults(t).Scenarios {
		for _, c := range s.Checks {
			if c.Verdict == history.CheckNotApplicable {
				out[s.Name+"\x00"+c.Name] = true
			}
		}
	}
	return out
}

// covering returns the rows that cover the check named name, judged in
// scenario by the reference: rows of a variant of the same scenario group
// whose pattern matches the name (a row covers the per-variant family of
// a check, e.g. a recovery's "at most 0 failed calls" on streamable HTTP
// and "at most 1" on SSE).
func covering(name, scenario string) []mutantRow {
	var out []mutantRow
	for _, r := range slices.Concat(mutantTable, containerMutantTable) {
		if groupOf(r.scenario) == groupOf(scenario) && r.checks.MatchString(name) {
			out = append(out, r)
		}
	}
	return out
}

// groupOf is a scenario name's group: "hang-kill/legacy/sse" → "hang-kill".
func groupOf(scenario string) string {
	group, _, _ := strings.Cut(scenario, "/")
	return group
}

// TestEveryCheckHasAMutant: every check the catalogue records against the
// reference (every scenario, every variant) is covered by a row of the
// table, in a variant of a scenario where the reference judges it: a check
// no mutant fails may be one no gateway can fail. Every row covers at
// least one check. (The container scenarios' checks are not run here, they
// need Docker: they are containerChecks, which TestContainerMutantTable
// compares with a real run.)
func TestEveryCheckHasAMutant(t *testing.T) {
	t.Parallel()
	checks := referenceChecks(t)
	for _, sc := range scenarios.Catalogue() {
		if sc.HasLabel(scenarios.LabelContainer) {
			checks[sc.Name] = containerChecks(sc.Name)
		}
	}
	covered := map[string]bool{}
	all := map[string]string{} // check → a scenario that judges it
	for sc, names := range checks {
		for _, n := range names {
			if _, ok := all[n]; !ok || sc < all[n] {
				all[n] = sc
			}
			if len(covering(n, sc)) > 0 {
				covered[n] = true
			}
		}
	}
	var missing []string
	for n, sc := range all {
		if !covered[n] {
			missing = append(missing, fmt.Sprintf("%q (e.g. in %s)", n, sc))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%d of %d checks have no mutant or fixture that fails them (add a row to mutantTable, or containerMutantTable):\n%s", len(missing), len(all), strings.Join(missing, "\n"))
	}
	for _, r := range slices.Concat(mutantTable, containerMutantTable) {
		if r.failureOnly {
			continue
		}
		if !slices.ContainsFunc(checks[r.scenario], r.checks.MatchString) {
			t.Errorf("the row %s × %s (%s) covers no check the reference records there", r.mutant, r.scenario, r.checks)
		}
	}
	for _, name := range failureOnlyChecks {
		if !slices.ContainsFunc(mutantTable, func(r mutantRow) bool { return r.failureOnly && r.checks.MatchString(name) }) {
			t.Errorf("the check %q, recorded only when it fails, has no row", name)
		}
	}
	t.Logf("%d checks, %d rows", len(all), len(mutantTable)+len(containerMutantTable))
}

// failureOnlyChecks are examples of the checks recorded only when they
// fail, which no run of the reference names: the kit's session recovery,
// and the runner's own (their mutants: mutant_runner_test.go; the leak
// check sees only its own run's goroutines, scenarios/runner/leaklabel.go, so a
// leaking mutant trips no run beside it).
var failureOnlyChecks = []string{
	"the session recovers from crash_eof",
	"topology starts",
	"no goroutine leaked",
	"teardown within its deadline",
	"scenario ran to the end (aborted at kit.go:1: connect a legacy client)",
}

// pair is a mutant run through a scenario, and the rows it judges.
type pair struct {
	mutant, scenario string
	rows             []mutantRow
}

// TestMutantTable runs every (mutant, scenario) pair of the table once,
// twice DefaultParallel at a time (a scenario that runs alone, as RunPool
// runs it, runs alone here too), and fails unless every check each row covers
// failed: for the reference's checks of the scenario the row matches,
// each failed on the mutant; for a failure-only row, at least one check
// matching it failed.
func TestMutantTable(t *testing.T) {
	t.Parallel()
	targets := mutantTargets()
	maps.Copy(targets, fixtureMutantTargets(t))
	pairs := pairsOf(t, mutantTable, func(name string) bool { return targets[name] != nil })
	start := time.Now()
	results := runPairs(t, pairs, targets)
	t.Logf("%d pairs (%d rows) in %s", len(pairs), len(mutantTable), time.Since(start).Round(time.Millisecond))
	// The reference's runs (shared with the suite), after the pairs: they
	// run side by side.
	reference := referenceChecks(t)
	notApplicable := referenceNotApplicable(t)

	for i, p := range pairs {
		res := results[i]
		verdicts, failed := verdictsOf(res)
		t.Logf("%s × %s: %s in %s, failed %q", p.mutant, p.scenario, res.Verdict, res.Duration.D(), failed)
		for _, r := range p.rows {
			if r.beyondReference {
				n := 0
				for _, c := range res.Checks {
					if !r.checks.MatchString(c.Name) {
						continue
					}
					n++
					if c.Verdict != history.CheckFailed {
						t.Errorf("%s × %s: %q is %q, want failed (%s): %s%s", p.mutant, p.scenario, c.Name, c.Verdict, r.why, c.Reason, c.Observed)
					}
				}
				if n == 0 {
					t.Errorf("%s × %s: no check matching %s was recorded (%s)", p.mutant, p.scenario, r.checks, r.why)
				}
				continue
			}
			if r.failureOnly {
				if !slices.ContainsFunc(failed, r.checks.MatchString) {
					t.Errorf("%s × %s: no check matching %s failed (%s)", p.mutant, p.scenario, r.checks, r.why)
				}
				continue
			}
			for _, name := range reference[p.scenario] {
				if !r.checks.MatchString(name) || notApplicable[p.scenario+"\x00"+name] {
					continue
				}
				if c := verdicts[name]; c.Verdict != history.CheckFailed {
					t.Errorf("%s × %s: %q is %q, want failed (%s): %s%s", p.mutant, p.scenario, name, c.Verdict, r.why, c.Reason, c.Observed)
				}
			}
		}
	}
}

// pairsOf groups rows by (mutant, scenario), in the rows' order; a row
// whose mutant is not known fails the test.
func pairsOf(t *testing.T, rows []mutantRow, known func(mutant string) bool) []*pair {
	t.Helper()
	var pairs []*pair
	byKey := map[[2]string]*pair{}
	for _, r := range rows {
		if !known(r.mutant) {
			t.Fatalf("row %s × %s: no mutant %q", r.mutant, r.scenario, r.mutant)
		}
		key := [2]string{r.mutant, r.scenario}
		if byKey[key] == nil {
			byKey[key] = &pair{mutant: r.mutant, scenario: r.scenario}
			pairs = append(pairs, byKey[key])
		}
		byKey[key].rows = append(byKey[key].rows, r)
	}
	return pairs
}

// verdictsOf is res's checks by name, and the names of those that failed.
func verdictsOf(res history.ScenarioResult) (map[string]history.Check, []string) {
	verdicts := map[string]history.Check{}
	var failed []string
	for _, c := range res.Checks {
		verdicts[c.Name] = c
		if c.Verdict == history.CheckFailed {
			failed = append(failed, c.Name)
		}
	}
	return verdicts, failed
}

// longPairs are the pairs (mutant × scenario group) that take far longer
// than the reference's run of the scenario (a mutant's slow errors or
// retries run to their bounds), measured on 2 cores: runPairs starts them
// first. A wrong figure costs wall time, never a verdict.
var longPairs = map[string]time.Duration{
	"fixture-i-init-retry × wrapping":     35 * time.Second,
	"slow-errors-11s × load":              20 * time.Second,
	"slow-errors × hang":                  20 * time.Second,
	"blast-radius × wrapping":             14 * time.Second,
	"keepalive-slow-interval × keepalive": 11 * time.Second,
	"no-deadline × hang-pause":            10 * time.Second,
	"keepalive-no-reprobe × keepalive":    9 * time.Second,
	"overcount-metrics × keepalive":       9 * time.Second,
}

// runPairs runs each pair's scenario against its mutant, at most
// 2 × testSlots() queued at once (testGate bounds how many run), longest
// first, and returns the results in pairs' order.
func runPairs(t *testing.T, pairs []*pair, targets map[string]targets.Target) []history.ScenarioResult {
	results := make([]history.ScenarioResult, len(pairs))
	scs := make([]scenarios.Scenario, len(pairs))
	for i, p := range pairs {
		scs[i] = scenario(t, p.scenario)
	}
	run := func(i int) {
		cfg := runnerMutantConfigs[pairs[i].mutant] // the runner's own checks' mutants: mutant_runner_test.go
		cfg.Target = targets[pairs[i].mutant]
		ctx := context.Background()
		if d := longPairs[pairs[i].mutant+" × "+scs[i].Group]; d > 0 {
			ctx = runner.WithExpected(ctx, d)
		}
		// A run not judged (a premise did not hold on a loaded machine:
		// alpha's health probes timed out, the optimizer had it out) shows
		// no mutant's failure: run again, at most twice more, as the
		// optimizer tests do. No row wants an inconclusive run.
		// So is a run that left one of the row's checks inconclusive (a
		// call over its time bound through a stall of the machine).
		for attempt := 1; ; attempt++ {
			results[i] = runScenario(ctx, scs[i], cfg).Result()
			unjudged := rowsUnjudged(pairs[i].rows, results[i])
			if (results[i].Verdict != history.VerdictInconclusive && unjudged == "") || attempt == 3 {
				break
			}
			t.Logf("%s × %s: %s (%s), run again", pairs[i].mutant, scs[i].Name, results[i].Verdict, cmp.Or(unjudged, results[i].Reason))
		}
	}
	// Twice as many waiting as the package's tests together may run
	// (testGate bounds them, first come first served): the table is the
	// package's longest test, so it keeps more of its runs queued than the
	// others do, and takes a larger share of the slots while they run.
	slots := make(chan struct{}, 2*testSlots())
	var wg sync.WaitGroup
	all := make([]int, len(pairs))
	for i := range all {
		all[i] = i
	}
	// The load scenario's pairs too: the gate gives them their share
	// (Gate.Enter), beside the others.
	known := map[string]bool{}
	for i, p := range pairs {
		known[p.mutant+" × "+scs[i].Group] = true
	}
	for k := range longPairs {
		if !known[k] {
			t.Errorf("longPairs names %q, not a pair of the table", k)
		}
	}
	order := runner.LongestFirst(scs, all)
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(longPairs[pairs[b].mutant+" × "+scs[b].Group], longPairs[pairs[a].mutant+" × "+scs[a].Group])
	})
	for _, i := range order {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			run(i)
		})
	}
	wg.Wait()
	return results
}

// rowsUnjudged names the first check of res that one of rows covers and
// that was inconclusive, with its reason ("" when there is none).
func rowsUnjudged(rows []mutantRow, res history.ScenarioResult) string {
	for _, c := range res.Checks {
		if c.Verdict != history.CheckInconclusive {
			continue
		}
		for _, r := range rows {
			if r.checks.MatchString(c.Name) {
				return fmt.Sprintf("%q inconclusive: %s", c.Name, c.Reason)
			}
		}
	}
	return ""
}
