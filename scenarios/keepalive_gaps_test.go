package scenarios

import (
	"testing"
	"time"
)

// TestEarlyGaps: a short gap right after a long one (the probe between
// arrived late) is excused; a short gap on its own, or a run of short
// gaps, is a probe sent early.
func TestEarlyGaps(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	for _, tc := range []struct {
		seq          []time.Duration
		early, fixed int
	}{
		{ms(300, 290, 310, 280, 320), 0, 0},
		{ms(261, 297, 387, 510, 98), 0, 1}, // .ci/load: one late arrival
		{ms(300, 98, 300), 1, 0},           // early, nothing late before it
		{ms(98, 300, 300), 1, 0},           // the first gap has none before it
		{ms(200, 200, 200), 3, 0},          // every 200 ms
		{ms(300, 150, 300), 1, 0},          // 300 + 150 < 2 × 270 − 50
	} {
		early, excused := earlyGaps(tc.seq, func(int) time.Duration { return 0 })
		if len(early) != tc.early || len(excused) != tc.fixed {
			t.Errorf("%v: early %v, excused %v; want %d early, %d excused", tc.seq, early, excused, tc.early, tc.fixed)
		}
	}
	// A short gap beside a stall of the harness is the machine's.
	stalled := func(i int) time.Duration {
		if i == 1 {
			return 240 * time.Millisecond
		}
		return 0
	}
	if early, excused := earlyGaps(ms(300, 150, 300, 150), stalled); len(early) != 1 || len(excused) != 1 {
		t.Errorf("with a stall around gap 1: early %v, excused %v; want gap 3 early, gap 1 excused", early, excused)
	}
}
