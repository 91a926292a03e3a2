package scenarios_test

import (
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
)

// runForFindings runs the named scenarios against target and returns the
// results, with their findings. The runs are shared (runShared): other
// tests read the same runs of the same targets. (The whole catalogue
// against the reference is referenceResults, run once.)
func runForFindings(t *testing.T, target targets.Target, names ...string) *history.Results {
	t.Helper()
	res := harness.NewResults(target)
	var scs []scenarios.Scenario
	for _, sc := range scenarios.Catalogue() {
		if !contains(names, sc.Name) {
			continue
		}
		scs = append(scs, sc)
	}
	for _, rec := range runShared(t, target, scs...) {
		res.Add(rec)
	}
	res.Findings = history.BuildFindings(res)
	for _, f := range res.Findings {
		t.Logf("%s: %s", target.Name(), f.Line())
	}
	return res
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// failedFindings are the findings of failed checks.
func failedFindings(res *history.Results) []history.Finding {
	var out []history.Finding
	for _, f := range res.Findings {
		if f.Judged() {
			out = append(out, f)
		}
	}
	return out
}

// TestEveryCheckHasAProperty runs the catalogue (but the container
// scenarios) against the reference gateway (referenceResults, shared with
// the mutant table's tests): every check it records
// declares a property of the closed catalogue, and the reference, which
// behaves, has no finding at all.
func TestEveryCheckHasAProperty(t *testing.T) {
	t.Parallel()
	res := referenceResults(t)
	n := 0
	for _, s := range res.Scenarios {
		for _, c := range s.Checks {
			n++
			if !c.Property.Known() {
				t.Errorf("%s: check %q declares no property of the catalogue (%q): add a rule to harness/history/property.go", s.Name, c.Name, c.Property)
			}
			if c.Transport == "" || c.Revision == "" || c.Fault == "" {
				t.Errorf("%s: check %q lacks what it was judged under: fault %q, transport %q, revision %q", s.Name, c.Name, c.Fault, c.Transport, c.Revision)
			}
		}
	}
	if n < 500 {
		t.Errorf("only %d checks in the catalogue's run", n)
	}
	// Not-applicable groups are findings too ("not judged, because the
	// gateway keeps its backend sessions open"): a behaving reference has
	// none failed and none inconclusive.
	for _, f := range res.Findings {
		if f.Verdict != history.CheckNotApplicable {
			t.Errorf("the reference has a finding, want none: %s", f.Line())
		}
	}
}

// TestFindingsOfKnownDefects: a gateway with one known defect gives
// exactly one finding, that defect's property, counting every check it
// failed: the no-deadline mutant (the reference with an hour-long call
// timeout) "bounded by the call timeout", also for its naming checks
// whose call only the client's own deadline ended; fixture a's broken
// variant (errors name no backend) "names the failing backend".
func TestFindingsOfKnownDefects(t *testing.T) {
	t.Parallel()
	t.Run("no-deadline mutant", func(t *testing.T) {
		names := []string{"wrapping/legacy/streamable-http", "hang/legacy/streamable-http"}
		res := runForFindings(t, noDeadlineMutant, names...)
		// As many as fixture b's broken variant (no deadline either) fails.
		expectOneFinding(t, res, history.PropBounded, 2, pinnedCount(t, "fixture-b-broken", names))
	})
	t.Run("fixture-a-broken", func(t *testing.T) {
		buildFixtureGW(t)
		names := []string{"wrapping/legacy/streamable-http", "breaker/legacy/streamable-http"}
		res := runForFindings(t, fixtureTarget(t, "fixture-a-broken"), names...)
		optional := 0
		for _, s := range res.Scenarios {
			optional += optionalFailures(s)
		}
		expectOneFinding(t, res, history.PropNamesBackend, 2, pinnedCount(t, "fixture-a-broken", names)+optional)
	})
}

// pinnedCount is how many checks the broken fixture fails in the named
// scenarios (brokenChecks, pinned from runs).
func pinnedCount(t *testing.T, fixture string, names []string) int {
	n := 0
	for _, name := range names {
		n += len(brokenChecks(fixture, scenario(t, name)))
	}
	return n
}

// expectOneFinding fails unless the run's only failed finding is of
// property p, counts every failed check of the run (want of them), and
// spans scenarios scenarios; its evidence and reproducing command are
// filled.
func expectOneFinding(t *testing.T, res *history.Results, p history.Property, scenarios, want int) {
	t.Helper()
	failed := 0
	for _, s := range res.Scenarios {
		n, _ := s.CheckCounts()
		failed += n
	}
	got := failedFindings(res)
	if len(got) != 1 {
		t.Fatalf("%d findings, want exactly one (%s)", len(got), p)
	}
	f := got[0]
	if f.Property != p || f.Checks != failed || f.Checks != want || len(f.Scenarios) != scenarios {
		t.Errorf("finding %s: %d checks in %d scenarios; want %s, %d checks (every failed one: %d) in %d scenarios",
			f.Property, f.Checks, len(f.Scenarios), p, want, failed, scenarios)
	}
	if f.First == nil || f.First.Call == "" || f.Worst == nil || f.Worst.Took < f.First.Took || len(f.Where) == 0 {
		t.Errorf("finding evidence: first %+v, worst %+v, where %+v", f.First, f.Worst, f.Where)
	}
	// The command runs the scenario of the first (the clearest) evidence.
	if f.Reproduce != "chaos run --scenario "+f.First.Scenario && f.Reproduce != "chaos run --profile "+res.Profile+" --scenario "+f.First.Scenario {
		t.Errorf("reproduce: %q, want the first evidence's scenario %s", f.Reproduce, f.First.Scenario)
	}
}
