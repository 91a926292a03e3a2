package bench

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

// TestMeasurePairsAlternates: the runs of a pair go direct first, then
// gateway first, so a machine that slows down over the step does not
// always hand the later side the worse share; an error ends the step.
func TestMeasurePairsAlternates(t *testing.T) {
	t.Parallel()
	var order []string
	run := func(side string) func() (round, error) {
		return func() (round, error) {
			order = append(order, side)
			return round{load: LoadResult{Calls: len(order)}}, nil
		}
	}
	var heard []int
	pairs, err := measurePairs(3, run("d"), run("g"), func(i int, _ pair) { heard = append(heard, i) })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"d", "g", "g", "d", "d", "g"}; !slices.Equal(order, want) {
		t.Errorf("runs in order %v, want %v", order, want)
	}
	if len(pairs) != 3 || pairs[1].gw.load.Calls != 3 || pairs[1].direct.load.Calls != 4 {
		t.Errorf("pairs %+v: the second pair's gateway run is the third run, its direct run the fourth", pairs)
	}
	if !slices.Equal(heard, []int{0, 1, 2}) {
		t.Errorf("progress heard of pairs %v, want 0 1 2", heard)
	}
	boom := errors.New("boom")
	n := 0
	_, err = measurePairs(3, func() (round, error) { n++; return round{}, nil }, func() (round, error) { n++; return round{}, boom }, func(int, pair) {})
	if !errors.Is(err, boom) || n != 2 {
		t.Errorf("an error in the first pair: err %v after %d runs, want boom after 2", err, n)
	}
}

// TestMedianPair: the figures come from the pair whose throughput ratio
// is the median, and the spread covers every pair; one pair has no
// spread figures.
func TestMedianPair(t *testing.T) {
	t.Parallel()
	mk := func(direct, gw float64) pair {
		cpu := []time.Duration{time.Second, time.Second}
		return pair{
			direct: round{load: LoadResult{Throughput: direct, Calls: 1000, Elapsed: time.Second}, cpu: cpu[:1], client: time.Second},
			gw:     round{load: LoadResult{Throughput: gw, Calls: 1000, Elapsed: time.Second}, cpu: cpu, client: time.Second},
		}
	}
	pairs := []pair{mk(100, 72), mk(100, 45), mk(200, 120), mk(100, 58), mk(100, 66)}
	med, lo, hi := medianPair(pairs)
	if med.ratio() != 0.6 || lo != 0.45 || hi != 0.72 {
		t.Errorf("median %v, spread %v–%v; want 0.6, 0.45–0.72", med.ratio(), lo, hi)
	}
	if med.direct.load.Throughput != 200 {
		t.Errorf("median pair's direct throughput %v, want 200 (the 120/200 pair)", med.direct.load.Throughput)
	}
	f := spreadFigures(pairs, lo, hi)
	if f["ratio.throughput_min"] != 0.45 || f["ratio.throughput_max"] != 0.72 {
		t.Errorf("spread figures %v", f)
	}
	// client + backend 2 ms per call direct, client + gateway + backend 3 ms: 2/3.
	if v := f["ratio.cpu_bound_throughput_min"]; math.Abs(v-2.0/3) > 1e-9 || f["ratio.cpu_bound_throughput_max"] != v {
		t.Errorf("CPU-bound spread %v–%v, want 0.667 both", v, f["ratio.cpu_bound_throughput_max"])
	}
	if f := spreadFigures(pairs[:1], 0.72, 0.72); len(f) != 0 {
		t.Errorf("one pair: spread figures %v, want none", f)
	}
	if _, _, hi := medianPair([]pair{mk(0, 10), mk(100, 50)}); hi != 0.5 {
		t.Errorf("a pair whose direct run made no call counts as ratio 0: highest %v, want 0.5", hi)
	}
}
