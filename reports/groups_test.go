package reports

import (
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// journal is an experiment journal: one scenario labelled experiment,
// with one call of the given outcome.
func journal(title, target string, passed bool, outcome history.Outcome) *history.Results {
	rec := history.NewRecorder(title, experimentLabel)
	rec.RecordCall(history.CallRecord{Method: "tools/call", Target: "beta_echo", Outcome: outcome, Error: "Post http://gw/mcp: EOF"})
	if passed {
		rec.Pass()
	} else {
		rec.Fail("deviated: method[1]: the stalled call is answered in bounded time deviated")
	}
	res := harness.NewResults(nil)
	res.Target = target
	res.Scenarios = append(res.Scenarios, rec.Result())
	return res
}

// TestJournalsOfDifferentExperiments: journals of different experiments
// are a list, one section each, not columns of one comparison; journals
// of the same experiment against two gateways are columns.
func TestJournalsOfDifferentExperiments(t *testing.T) {
	in := []Input{
		{Name: "stall.json", Results: journal("a stall on beta does not hang", "gw1", false, history.OutcomeDropped)},
		{Name: "error.json", Results: journal("an error on beta_echo names beta", "gw1", true, history.OutcomeOK)},
		{Name: "breaker.json", Results: journal("the breaker on beta opens", "gw1", true, history.OutcomeOK)},
	}
	b := render(t, in)
	p := checkStructure(t, b, in)
	if p.ids["compare"] != nil || strings.Contains(string(b), "not run") || strings.Contains(string(b), "where the runs differ") {
		t.Error("different experiments are rendered as columns of one comparison")
	}
	list := p.ids["experiments"]
	if list == nil {
		t.Fatal("no list of experiments")
	}
	items := find(list, "li", "")
	if len(items) != 3 || !strings.Contains(text(items[0]), "a stall on beta does not hang") || !strings.Contains(text(items[0]), "failed") ||
		!strings.Contains(text(items[0]), "deviated: method[1]") {
		t.Errorf("experiments list: %d items, first %q", len(items), text(items[0]))
	}
	if !strings.Contains(string(b), "dropped without an answer") {
		t.Error("the dropped call is not said to be dropped without an answer")
	}

	// The same experiment against two gateways: side by side.
	same := []Input{
		{Name: "gw1.json", Results: journal("a stall on beta does not hang", "gw1", true, history.OutcomeOK)},
		{Name: "gw2.json", Results: journal("a stall on beta does not hang", "gw2", false, history.OutcomeDropped)},
	}
	sp := parse(t, render(t, same))
	if sp.ids["experiments"] != nil || sp.ids["compare"] == nil || len(find(sp.ids["compare"], "tr", "differs")) != 1 {
		t.Error("the same experiment against two gateways is not compared side by side")
	}

	// Two journals of one experiment and one of another: one comparison
	// (of the two), and the list.
	mixed := append(same, in[1])
	mp := parse(t, render(t, mixed))
	if mp.ids["compare"] == nil || mp.ids["experiments"] == nil || len(find(find(mp.ids["compare"], "thead", "")[0], "th", "")) != 3 {
		t.Error("mixed inputs: want one comparison of the two runs of the same experiment and the list of experiments")
	}
}
