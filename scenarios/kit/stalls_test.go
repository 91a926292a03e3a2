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
