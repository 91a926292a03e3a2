package scenarios

import (
	"slices"
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// TestSelectTakesGinkgoLabelFilters: chaos run --label takes the
// suite's label-filter expressions, and full scenario names.
func TestSelectTakesGinkgoLabelFilters(t *testing.T) {
	t.Parallel()
	all := Catalogue()
	names := func(filters ...string) []string {
		t.Helper()
		sel, err := Select(all, filters...)
		if err != nil {
			t.Fatalf("Select(%q): %v", filters, err)
		}
		var out []string
		for _, s := range sel {
			out = append(out, s.Name)
		}
		return out
	}
	if got := names(); len(got) != len(all) {
		t.Errorf("no filter: %d of %d", len(got), len(all))
	}
	hangNotProcess := names("hang && !process")
	for _, n := range hangNotProcess {
		if strings.HasPrefix(n, "hang-kill/") || strings.HasPrefix(n, "hang-pause/") || strings.HasPrefix(n, "wrapping/") {
			t.Errorf("hang && !process selected %s", n)
		}
	}
	if !slices.Contains(hangNotProcess, "hang-cancel/modern/sse") || !slices.Contains(hangNotProcess, "hang/legacy/streamable-http") {
		t.Errorf("hang && !process: %v", hangNotProcess)
	}
	if got := names("hang-kill"); len(got) != 3 {
		t.Errorf("the group as a label: %v", got)
	}
	if got := names("breaker, session"); len(got) != 4 {
		t.Errorf("a comma is ||: %v", got)
	}
	if got := names("wrapping/legacy/sse,hang/modern/sse"); !slices.Equal(got, []string{"wrapping/legacy/sse", "hang/modern/sse"}) {
		t.Errorf("scenario names: %v", got)
	}
	if got := names("breaker", "restart && legacy"); len(got) != 4 {
		t.Errorf("two filters are ORed: %v", got)
	}
	if _, err := Select(all, "hang && (process"); err == nil || !strings.Contains(err.Error(), "hang && (process") ||
		!strings.Contains(err.Error(), "Mismatched '('") || strings.ContainsAny(err.Error(), "\x1b{}") {
		t.Errorf("a bad filter: %v", err)
	}
}

// TestNarrowIsAnAnd: chaos run --scenario keeps the named scenarios of
// what the --label filters selected, never one the filters left out.
func TestNarrowIsAnAnd(t *testing.T) {
	t.Parallel()
	all := Catalogue()
	sel, err := Select(all, "!container", "hang && legacy")
	if err != nil {
		t.Fatal(err)
	}
	names := func(scs []Scenario) (out []string) {
		for _, s := range scs {
			out = append(out, s.Name)
		}
		return out
	}
	got, err := Narrow(all, sel, "hang/legacy/sse", "wrapping/modern/sse, container-kill/legacy")
	if err != nil || !slices.Equal(names(got), []string{"wrapping/modern/sse", "hang/legacy/sse"}) {
		t.Errorf("narrowed: %v %v, want the named ones the filters matched, in catalogue order", names(got), err)
	}
	hang, _ := Select(all, "hang && modern")
	if got, err := Narrow(all, hang, "hang/legacy/sse"); err != nil || len(got) != 0 {
		t.Errorf("a name the filters left out: %v %v, want none", names(got), err)
	}
	if got, err := Narrow(all, sel); err != nil || len(got) != len(sel) {
		t.Errorf("no name: %d of %d, %v", len(got), len(sel), err)
	}
	if _, err := Narrow(all, sel, "hang/legacy/nope"); err == nil || !strings.Contains(err.Error(), `"hang/legacy/nope"`) {
		t.Errorf("an unknown name: %v", err)
	}
}

// TestNotApplicableListsChecksByCapability: what --list says a target
// cannot be judged on.
func TestNotApplicableListsChecksByCapability(t *testing.T) {
	t.Parallel()
	var breaker Scenario
	for _, s := range Catalogue() {
		if s.Group == "breaker" {
			breaker = s
			break
		}
	}
	if got := breaker.NotApplicable("gw", targets.Capabilities{targets.CapBreaker, targets.CapHealthAPI, targets.CapMetrics}); len(got) != 0 {
		t.Errorf("everything declared: %v", got)
	}
	got := breaker.NotApplicable("gw", targets.Capabilities{targets.CapBreaker, targets.CapHealthAPI})
	if len(got) != 1 || got[0] != breakerMetricsCheck.Name+" (lacks metrics)" {
		t.Errorf("no metrics: %v", got)
	}
	got = breaker.NotApplicable("gw", nil)
	if len(got) != 1 || !strings.Contains(got[0], "the whole scenario") || !strings.Contains(got[0], "breaker") {
		t.Errorf("no breaker: %v", got)
	}
}
