package scenarios

import (
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// TestTypicalDurations: every group of the catalogue has a typical duration
// (a new group must say how long it takes), given to its scenarios, and
// a lane is ordered by them, longest first, the catalogue's order kept among equals.
func TestTypicalDurations(t *testing.T) {
	t.Parallel()
	all := Catalogue()
	var container []int
	for i, sc := range all {
		if d, ok := typicalDurations[sc.Group]; !ok {
			t.Errorf("group %s (%s) has no typical duration", sc.Group, sc.Name)
		} else if sc.Typical != d {
			t.Errorf("%s: Typical %s, want its group's %s", sc.Name, sc.Typical, d)
		}
		if sc.Lane() == runner.LaneContainer {
			container = append(container, i)
		}
	}
	order := runner.LongestFirst(all, container)
	if len(order) != len(container) {
		t.Fatalf("%d ordered of %d", len(order), len(container))
	}
	for j := 1; j < len(order); j++ {
		prev, cur := all[order[j-1]], all[order[j]]
		if prev.Typical < cur.Typical || (prev.Group == cur.Group && order[j-1] > order[j]) {
			t.Errorf("%s before %s", prev.Name, cur.Name)
		}
	}
	if first, last := all[order[0]].Group, all[order[len(order)-1]].Group; first != "container-kill" || last != "container-gateway-restart" {
		t.Errorf("container lane starts with %s and ends with %s; want container-kill first, container-gateway-restart last", first, last)
	}
}
