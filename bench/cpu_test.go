package bench

import (
	"math"
	"testing"
	"time"
)

// TestCPUFigures: every CPU ratio divides by the backend's CPU per call
// in the direct run. The numbers are issue 24's: a gateway that burns
// 1.02 ms per call and makes the backend burn 0.47 ms per call through
// it, against 0.114 ms direct, is 8.9× the direct backend with a backend
// amplification of 4.1× (the old figure, ÷ the backend in the gateway
// run, showed 2.18×).
func TestCPUFigures(t *testing.T) {
	t.Parallel()
	const calls = 1000
	direct := round{load: LoadResult{Calls: 2 * calls}, cpu: []time.Duration{2 * calls * 114 * time.Microsecond}}
	gw := round{load: LoadResult{Calls: calls}, cpu: []time.Duration{calls * 1020 * time.Microsecond, calls * 470 * time.Microsecond}}
	f := cpuFigures(direct, gw)
	want := map[string]float64{
		"direct.backend_cpu_ms_per_call":  0.114,
		"gateway.cpu_ms_per_call":         1.02,
		"gateway.backend_cpu_ms_per_call": 0.47,
		"gateway.cpu_s":                   1.02,
		"ratio.cpu_per_call":              1.02 / 0.114,
		"ratio.backend_amplification":     0.47 / 0.114,
		"ratio.total_cpu_per_call":        (1.02 + 0.47) / 0.114,
	}
	checkFigures(t, f, want)
	if len(f) != len(want) {
		t.Errorf("figures %v, want exactly %v", f, want)
	}
}

// checkFigures fails t for each figure of want that f lacks or holds
// another value of (within a relative 1e-9).
func checkFigures(t *testing.T, f, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		if got, ok := f[k]; !ok || math.Abs(got-w) > 1e-9*math.Max(1, w) {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, w)
		}
	}
}

// TestCPUFiguresUnreadable: a ratio is left out when its denominator
// measured nothing (no CPU tick in a short direct run) or a process's CPU
// could not be read; it is never 0 or +Inf.
func TestCPUFiguresUnreadable(t *testing.T) {
	t.Parallel()
	gw := round{load: LoadResult{Calls: 10}, cpu: []time.Duration{10 * time.Millisecond, 5 * time.Millisecond}}
	f := cpuFigures(round{load: LoadResult{Calls: 10}, cpu: []time.Duration{0}}, gw)
	for _, k := range []string{"ratio.cpu_per_call", "ratio.backend_amplification", "ratio.total_cpu_per_call"} {
		if v, ok := f[k]; ok {
			t.Errorf("direct backend CPU 0: %s = %v, want no figure", k, v)
		}
	}
	if f["gateway.cpu_ms_per_call"] != 1 || f["gateway.backend_cpu_ms_per_call"] != 0.5 {
		t.Errorf("per-call figures %v, want gateway 1 ms and backend 0.5 ms", f)
	}
	f = cpuFigures(round{load: LoadResult{Calls: 10}, cpu: []time.Duration{-1}}, round{load: LoadResult{Calls: 10}, cpu: []time.Duration{-1, -1}})
	if len(f) != 0 {
		t.Errorf("nothing readable: figures %v, want none", f)
	}
}
