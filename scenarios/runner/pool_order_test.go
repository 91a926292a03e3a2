package runner

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLongestFirst: a lane is ordered by the scenarios' typical
// durations, longest first, their order kept among equals, and one without
// a figure counts as the longest (the catalogue's figures:
// scenarios.TestTypicalDurations).
func TestLongestFirst(t *testing.T) {
	t.Parallel()
	scs := []Scenario{
		{Name: "short", Typical: time.Second},
		{Name: "long", Typical: 30 * time.Second},
		{Name: "short-2", Typical: time.Second},
		{Name: "new"},
		{Name: "mid", Typical: 4 * time.Second},
	}
	var got []string
	for _, i := range LongestFirst(scs, []int{0, 1, 2, 3, 4}) {
		got = append(got, scs[i].Name)
	}
	if want := []string{"new", "long", "mid", "short", "short-2"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if d := typicalDuration(Scenario{Group: "new"}); d < time.Minute {
		t.Errorf("a scenario without a figure counts %s; want it first (the longest)", d)
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
