package kit

import (
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
