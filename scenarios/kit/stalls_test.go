package kit

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestStallsOverlap: the stalled time within a window is the overlap of
// every recorded stall with it; Max is the longest stall.
func TestStallsOverlap(t *testing.T) {
	s := WatchStalls()
	s.Stop()
	s.Stop() // twice is fine
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	s.spans = [][2]time.Time{{at(100), at(400)}, {at(1000), at(1050)}}
	for _, tc := range []struct {
		from, to int
		want     time.Duration
	}{
		{0, 100, 0},
		{0, 2000, 350 * time.Millisecond},
		{200, 300, 100 * time.Millisecond},
		{300, 1020, 120 * time.Millisecond},
		{500, 900, 0},
	} {
		if got := s.Overlap(at(tc.from), at(tc.to)); got != tc.want {
			t.Errorf("Overlap(%d ms, %d ms) = %s, want %s", tc.from, tc.to, got, tc.want)
		}
	}
	if s.Max() != 300*time.Millisecond {
		t.Errorf("Max %s", s.Max())
	}
}

// TestStallsExcusing: a time over its bound is excused only by one stall
// within it at least as long as the excess, never by a sum of short ones.
func TestStallsExcusing(t *testing.T) {
	s := WatchStalls()
	s.Stop()
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// Ten 30 ms stalls (300 ms in all) from 0 to 1 s, one of 400 ms at 2 s.
	for i := range 10 {
		s.spans = append(s.spans, [2]time.Time{at(100 * i), at(100*i + 30)})
	}
	s.spans = append(s.spans, [2]time.Time{at(2000), at(2400)})
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		start, took, bound int
		want               time.Duration
	}{
		{0, 900, 1000, 0},           // within its bound
		{0, 1200, 1000, 0},          // 200 ms over, short stalls only (300 ms summed)
		{1800, 1200, 1000, ms(400)}, // 200 ms over, through the 400 ms stall
		{1800, 1500, 1000, 0},       // 500 ms over: the stall is shorter
		{2200, 1200, 1000, ms(200)}, // the stall's part within the call counts
		{2300, 1200, 1000, 0},       // 100 ms of it within, 200 ms over
	} {
		if got := s.Excusing(at(tc.start), ms(tc.took), ms(tc.bound)); got != tc.want {
			t.Errorf("Excusing(at %d ms, took %d ms, bound %d ms) = %s, want %s", tc.start, tc.took, tc.bound, got, tc.want)
		}
	}
}

// TestLateThrough: an event later than its bound is excused by one stall
// of this process at least as long as the lateness, never by a sum of
// short ones nor by the process's CPU wait (a loaded machine's is
// hundreds of milliseconds a second: a gateway reporting errors 1.2 s late
// passed so); a gateway late on an idle machine is judged. (The ping rule,
// with a session, is OverBound's: TestOneTimeoutBeforeAnyFaultIsNoVerdict
// and the mutant table.)
func TestLateThrough(t *testing.T) {
	s := WatchStalls()
	s.Stop()
	t0 := time.Now().Add(-time.Minute)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	s.spans = [][2]time.Time{{at(500), at(800)}} // a 300 ms stall
	for i := range 10 {                          // ten of 30 ms from 3 s
		s.spans = append(s.spans, [2]time.Time{at(3000 + 100*i), at(3000 + 100*i + 30)})
	}
	// The process waited 1 s per CPU from 10 s to 11.2 s.
	cpus := time.Duration(runtime.NumCPU())
	s.cpu = starvation{pids: []int{1}, samples: []starveSample{
		{at: at(10000), waited: []time.Duration{0}},
		{at: at(11200), waited: []time.Duration{ms(1000) * cpus}},
	}}
	k := &Kit{Ctx: context.Background(), stalls: s}
	for _, tc := range []struct {
		start, took, bound int
		excused            string // "" when judged
	}{
		{0, 900, 1000, ""},               // in time
		{0, 1200, 1000, "stalled 300ms"}, // 200 ms late through the 300 ms stall
		{0, 1400, 1000, ""},              // 400 ms late: the stall is shorter
		{2000, 1200, 1000, ""},           // late on an idle machine
		{3000, 1200, 1000, ""},           // 200 ms late, 300 ms of short stalls summed
		{10000, 1200, 1000, ""},          // 200 ms late with 1 s of CPU wait: judged
	} {
		got := k.LateThrough(nil, "beta's recovery", at(tc.start), ms(tc.took), ms(tc.bound))
		if tc.excused == "" && got != "" || tc.excused != "" && !strings.Contains(got, tc.excused) {
			t.Errorf("LateThrough(at %d ms, took %d ms, bound %d ms) = %q, want %q", tc.start, tc.took, tc.bound, got, tc.excused)
		}
	}
	if got := (&Kit{Ctx: context.Background()}).LateThrough(nil, "x", at(0), ms(1200), ms(1000)); got != "" {
		t.Errorf("without a watcher or a session: %q, want judged", got)
	}
}

// TestKitTakesTheRunsWatcher: a kit made under a context carrying a
// watcher (the runner's) uses it, and its own WatchStalls leaves it be.
func TestKitTakesTheRunsWatcher(t *testing.T) {
	s := WatchStalls()
	defer s.Stop()
	k := New(WithStalls(context.Background(), s), nil, nil)
	if k.stalls != s {
		t.Fatal("the kit does not use the context's watcher")
	}
	k.WatchStalls()()
	if k.stalls != s {
		t.Error("WatchStalls replaced the run's watcher")
	}
	if New(context.Background(), nil, nil).stalls != nil {
		t.Error("a kit without a watcher in its context has one")
	}
}

// TestWatchStallsOnlyReadsNoCPU: the runner's watcher records no CPU
// samples (Starved is 0), the full one does.
func TestWatchStallsOnlyReadsNoCPU(t *testing.T) {
	only, full := WatchStallsOnly(), WatchStalls()
	time.Sleep(3 * starveTick)
	only.Stop()
	full.Stop()
	if n := len(only.cpu.samples); n != 0 {
		t.Errorf("WatchStallsOnly took %d CPU samples, want none", n)
	}
	if n := len(full.cpu.samples); n < 2 {
		t.Errorf("WatchStalls took %d CPU samples, want some", n)
	}
}
