package bench

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
)

func TestReadProcSelf(t *testing.T) {
	// Burn a little CPU so the figure moves.
	before, err := ReadProc(0)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(150 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		x++
	}
	after, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after.CPU <= before.CPU {
		t.Errorf("CPU did not grow over a busy loop: %v then %v (loop %d)", before.CPU, after.CPU, x)
	}
	if after.RSS <= 0 || after.PeakRSS < after.RSS {
		t.Errorf("RSS %d, peak %d: want 0 < RSS <= peak", after.RSS, after.PeakRSS)
	}
	if _, err := ReadProc(1 << 30); err == nil {
		t.Error("ReadProc of a pid that does not exist: no error")
	}
}

func TestQuantiles(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	p50, p99, mx := quantiles(d)
	if p50 != 50*time.Millisecond || p99 != 99*time.Millisecond || mx != 100*time.Millisecond {
		t.Errorf("quantiles of 1..100 ms = %v %v %v, want 50ms 99ms 100ms", p50, p99, mx)
	}
	if a, b, c := quantiles(nil); a != 0 || b != 0 || c != 0 {
		t.Errorf("quantiles(nil) = %v %v %v", a, b, c)
	}
}

// TestRunSmall runs the whole bench, scaled down, against chaos vmcp as a
// process in front of process backends: every scenario passes (no healthy
// call fails) and carries the figures reports read.
func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the chaos binary and starts processes; not in -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin, err := harness.BuildChaos(ctx)
	if err != nil {
		t.Fatal(err)
	}
	target, err := harness.TargetConfig{Kind: "exec"}.Target(func() (string, error) { return bin, nil })
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(ctx, Config{Target: target, Runtime: harness.Process{Binary: bin}, Clients: 4,
		Duration: 300 * time.Millisecond, Calls: 400, CallTimeout: 10 * time.Second, Opens: 3, Sessions: 20})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"bench/calls/legacy":     {"direct.throughput_per_s", "gateway.throughput_per_s", "ratio.throughput", "gateway.cpu_ms_per_call", "ratio.cpu_per_call", "gateway.rss_peak_mb", "c1_p50_overhead_ms"},
		"bench/calls/modern":     {"direct.p50_ms", "gateway.p99_ms", "gateway.max_ms", "gateway.errors"},
		"bench/open/2-backends":  {"direct.open_ms", "gateway.open_ms", "ratio.open"},
		"bench/open/20-sessions": {"gateway.open_all_s", "gateway.rss_mb", "errors"},
		"bench/open/4x500-tools": {"direct.initialize_ms", "gateway.initialize_ms", "ratio.initialize"},
	}
	seen := map[string]bool{}
	for _, s := range res.Scenarios {
		seen[s.Name] = true
		if s.Verdict != harness.VerdictPassed {
			t.Errorf("%s: %s (%s)", s.Name, s.Verdict, s.Reason)
		}
		for _, f := range want[s.Name] {
			if _, ok := s.Figures[f]; !ok {
				t.Errorf("%s: no figure %s (have %v)", s.Name, f, s.Figures)
			}
		}
		if calls, ok := s.Figures["gateway.calls"]; ok && (calls < 1 || calls > 400) {
			t.Errorf("%s: gateway.calls %v, want 1..400 (the --calls bound)", s.Name, calls)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("no scenario %s in %v", name, res.Scenarios)
		}
	}
}
