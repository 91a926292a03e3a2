package bench

import (
	"testing"
	"time"
)

// TestShareFigures: a run that fills 2 cores. Direct, 1,000 calls in 1 s
// cost the client 1 s and the backend 1 s of CPU (2 ms a call, 2 cores
// used); through the gateway 600 calls in 1 s cost the client 0.6 s, the
// gateway 0.84 s and the backend 0.56 s (3.33 ms a call): the CPU allows
// 0.6× the direct throughput.
func TestShareFigures(t *testing.T) {
	t.Parallel()
	direct := round{load: LoadResult{Calls: 1000, Elapsed: time.Second}, cpu: []time.Duration{time.Second},
		client: time.Second, machineBusy: 2 * time.Second}
	gw := round{load: LoadResult{Calls: 600, Elapsed: time.Second}, cpu: []time.Duration{840 * time.Millisecond, 560 * time.Millisecond},
		client: 600 * time.Millisecond, machineBusy: 2500 * time.Millisecond}
	f := shareFigures(direct, gw)
	want := map[string]float64{
		"direct.client_cpu_ms_per_call":  1,
		"gateway.client_cpu_ms_per_call": 1,
		"direct.cores_used":              2,
		"gateway.cores_used":             2,
		"direct.machine_busy_cores":      2,
		"gateway.machine_busy_cores":     2.5,
		"ratio.cpu_bound_throughput":     2 / (2000.0 / 600),
	}
	checkFigures(t, f, want)
	if f["machine.cores"] < 1 || len(f) != len(want)+1 {
		t.Errorf("figures %v, want exactly %v and machine.cores", f, want)
	}
}

// TestShareFiguresUnreadable: a process whose CPU could not be read
// leaves out the figures that need it, never a 0 or +Inf.
func TestShareFiguresUnreadable(t *testing.T) {
	t.Parallel()
	direct := round{load: LoadResult{Calls: 10, Elapsed: time.Second}, cpu: []time.Duration{-1}, client: time.Second, machineBusy: -1}
	gw := round{load: LoadResult{Calls: 10, Elapsed: time.Second}, cpu: []time.Duration{time.Second, time.Second}, client: -1, machineBusy: -1}
	f := shareFigures(direct, gw)
	for _, k := range []string{"direct.cores_used", "gateway.cores_used", "ratio.cpu_bound_throughput", "gateway.client_cpu_ms_per_call",
		"direct.machine_busy_cores", "gateway.machine_busy_cores"} {
		if v, ok := f[k]; ok {
			t.Errorf("%s = %v, want no figure", k, v)
		}
	}
	if f["direct.client_cpu_ms_per_call"] != 100 {
		t.Errorf("direct client CPU per call %v, want 100 ms", f["direct.client_cpu_ms_per_call"])
	}
}

// TestMachineReadings: /proc/stat and /proc/loadavg read as numbers on
// this machine, and the machine's busy time only grows.
func TestMachineReadings(t *testing.T) {
	t.Parallel()
	a := machineBusy()
	b := machineBusy()
	if a < 0 || b < a {
		t.Errorf("machineBusy %v then %v, want readable and growing", a, b)
	}
	if l := loadAverage(); l < 0 {
		t.Errorf("loadAverage %v, want readable", l)
	}
}
