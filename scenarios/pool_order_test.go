package scenarios

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLongestFirst: every group of the catalogue has a typical duration
// (a new group must say how long it takes), and a lane is ordered by
// them, longest first, the catalogue's order kept among equals.
func TestLongestFirst(t *testing.T) {
	t.Parallel()
	all := Catalogue()
	var container []int
	for i, sc := range all {
		if _, ok := typicalDurations[sc.Group]; !ok {
			t.Errorf("group %s (%s) has no typical duration", sc.Group, sc.Name)
		}
		if sc.Lane() == LaneContainer {
			container = append(container, i)
		}
	}
	order := longestFirst(all, container)
	if len(order) != len(container) {
		t.Fatalf("%d ordered of %d", len(order), len(container))
	}
	for j := 1; j < len(order); j++ {
		prev, cur := all[order[j-1]], all[order[j]]
		if typicalDuration(prev) < typicalDuration(cur) || (prev.Group == cur.Group && order[j-1] > order[j]) {
			t.Errorf("%s before %s", prev.Name, cur.Name)
		}
	}
	if first, last := all[order[0]].Group, all[order[len(order)-1]].Group; first != "container-kill" || last != "container-gateway-restart" {
		t.Errorf("container lane starts with %s and ends with %s; want container-kill first, container-gateway-restart last", first, last)
	}
	if d := typicalDuration(Scenario{Group: "new"}); d < time.Minute {
		t.Errorf("a group without a figure counts %s; want it first (the longest)", d)
	}
}

// TestRunSlots: runSlots runs every index, n at once (the first n are
// held until all n have started), never more, and starts none once its
// context has ended.
func TestRunSlots(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var running, most int
	var ran atomic.Int32
	arrived, release := make(chan struct{}, 7), make(chan struct{})
	go func() {
		defer close(release)
		for range 3 {
			select {
			case <-arrived:
			case <-time.After(10 * time.Second): // fewer than 3 at once: the check below fails
				return
			}
		}
	}()
	runSlots(context.Background(), []int{0, 1, 2, 3, 4, 5, 6}, 3, func(int) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		arrived <- struct{}{}
		<-release
		mu.Lock()
		running--
		mu.Unlock()
		ran.Add(1)
	})
	if ran.Load() != 7 || most != 3 {
		t.Errorf("ran %d of 7, at most %d at once; want 7, 3 at once", ran.Load(), most)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran.Store(0)
	runSlots(ctx, []int{0, 1, 2}, 1, func(int) { ran.Add(1); cancel() })
	if ran.Load() != 1 {
		t.Errorf("ran %d after the context ended in the first; want 1", ran.Load())
	}
}
