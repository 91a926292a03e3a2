package bench

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// Serial: it reads the CPU time of the whole test process, which the
// parallel tests would move too: it could grow without the busy loop.
func TestReadProcSelf(t *testing.T) {
	// Burn a little CPU so the figure moves.
	before, err := ReadProc(0)
	if err != nil {
		t.Fatal(err)
	}
	// Busy until the figure moves (CPU time has a 10 ms tick, and a loaded
	// machine gave a 150 ms busy loop less than one), bounded by 10 s.
	x := 0
	var after ProcSample
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		for spin := time.Now().Add(20 * time.Millisecond); time.Now().Before(spin); {
			x++
		}
		if after, err = ReadProc(os.Getpid()); err != nil {
			t.Fatal(err)
		}
		if after.CPU > before.CPU {
			break
		}
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
	t.Parallel()
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
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the chaos binary and starts processes; not in -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin, err := runtimes.BuildChaos(ctx)
	if err != nil {
		t.Fatal(err)
	}
	target, err := targets.TargetConfig{Kind: "exec"}.Target(func() (string, error) { return bin, nil })
	if err != nil {
		t.Fatal(err)
	}
	res := runSplit(ctx, t, Config{Target: target, Runtime: runtimes.Process{Binary: bin}, Clients: 4, Pairs: 2,
		Duration: 300 * time.Millisecond, Calls: 400, CallTimeout: 10 * time.Second, Opens: 3, Sessions: 20,
		ErrorCalls: 20, StallTimeout: time.Second, StallCalls: 2, StallDeadline: 20 * time.Second,
		ScaleSessions: []int{20}, ScaleDuration: 2 * time.Second, ScaleRate: 100, CrashEvery: 500 * time.Millisecond})
	errFigures := []string{"direct.calls", "direct.errors", "direct.p50_ms", "direct.p99_ms", "direct.max_ms", "gateway.calls", "gateway.errors",
		"gateway.p50_ms", "gateway.p99_ms", "gateway.max_ms", "gateway.errors_naming_backend", "gateway.unanswered", "ratio.p50"}
	want := map[string][]string{
		"bench/calls/legacy": {"direct.throughput_per_s", "gateway.throughput_per_s", "ratio.throughput", "gateway.cpu_ms_per_call", "ratio.cpu_per_call",
			"direct.backend_cpu_ms_per_call", "gateway.backend_cpu_ms_per_call", "ratio.backend_amplification", "ratio.total_cpu_per_call", "gateway.rss_peak_mb", "c1_p50_overhead_ms",
			"pairs", "ratio.throughput_min", "ratio.throughput_max"},
		"bench/calls/modern":     {"direct.p50_ms", "gateway.p99_ms", "gateway.max_ms", "gateway.errors"},
		"bench/open/2-backends":  {"direct.open_ms", "gateway.open_ms", "ratio.open"},
		"bench/open/20-sessions": {"gateway.open_all_s", "gateway.rss_mb", "errors"},
		"bench/open/4x500-tools": {"direct.initialize_ms", "gateway.initialize_ms", "ratio.initialize"},
		"bench/error/http-403":   errFigures,
		"bench/error/sigkill":    errFigures,
		"bench/stall/1s-timeout": {"gateway.call_timeout_ms", "gateway.calls", "gateway.p50_ms", "gateway.max_ms", "gateway.max_over_timeout_ms",
			"gateway.errors_naming_backend", "gateway.unanswered", "direct.max_ms", "direct.max_over_timeout_ms"},
		"bench/scale/20-sessions": {"gateway.open_all_s", "gateway.open_errors", "gateway.calls", "gateway.errors", "gateway.unanswered",
			"gateway.p50_ms", "gateway.p99_ms", "gateway.rss_peak_mb", "crashloop.restarts", "direct.calls", "direct.errors", "direct.p99_ms", "ratio.p99"},
	}
	// The CPU ratios divide by the direct backend's CPU per call.
	cpuRatios := map[string]bool{"ratio.cpu_per_call": true, "ratio.backend_amplification": true, "ratio.total_cpu_per_call": true}
	seen := map[string]bool{}
	for _, s := range res.Scenarios {
		seen[s.Name] = true
		if s.Verdict != history.VerdictPassed {
			t.Errorf("%s: %s (%s)", s.Name, s.Verdict, s.Reason)
		}
		for _, f := range want[s.Name] {
			_, ok := s.Figures[f]
			if cpuRatios[f] && s.Figures["direct.backend_cpu_ms_per_call"] == 0 {
				// The direct run measured no CPU of the backend (fewer
				// calls than a clock tick's worth: a loaded machine gave
				// the 300 ms run 0.13 of a core): the ratio is left out,
				// never infinite.
				if ok {
					t.Errorf("%s: figure %s = %v with no CPU measured for the direct backend", s.Name, f, s.Figures[f])
				}
				continue
			}
			if !ok {
				t.Errorf("%s: no figure %s (have %v)", s.Name, f, s.Figures)
			}
		}
		if calls, ok := s.Figures["gateway.calls"]; ok && strings.HasPrefix(s.Name, "bench/calls/") && (calls < 1 || calls > 400) {
			t.Errorf("%s: gateway.calls %v, want 1..400 (the --calls bound)", s.Name, calls)
		}
		if p, ok := s.Figures["pairs"]; ok && p != 2 {
			t.Errorf("%s: pairs %v, want 2", s.Name, p)
		}
		checkFaultFigures(t, s.Name, s.Figures, 20, 2)
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("no scenario %s in %v", name, res.Scenarios)
		}
	}
}

// checkFaultFigures holds our gateway's fault and scale figures to what it
// does: every faulted call fails, in time, naming the backend; no healthy
// call fails while a backend crash-loops.
func checkFaultFigures(t *testing.T, name string, f map[string]float64, errorCalls, stallCalls float64) {
	t.Helper()
	is := func(fig string, want float64) {
		if got, ok := f[fig]; ok && got != want {
			t.Errorf("%s: %s = %v, want %v (figures %v)", name, fig, got, want, f)
		}
	}
	switch {
	case strings.HasPrefix(name, "bench/error/"):
		for _, side := range []string{"direct", "gateway"} {
			is(side+".calls", errorCalls)
			is(side+".errors", errorCalls)
			is(side+".unanswered", 0)
		}
		is("gateway.errors_naming_backend", errorCalls)
	case strings.HasPrefix(name, "bench/stall/"):
		is("gateway.calls", stallCalls)
		is("direct.calls", stallCalls)
		is("direct.errors", stallCalls)
		is("gateway.errors", stallCalls)
		is("gateway.unanswered", 0)
		is("gateway.errors_naming_backend", stallCalls)
		// Ended by the gateway's 1 s timeout: not before it, and not
		// near the client's 20 s deadline (a generous bound: the machine
		// is loaded; the figure itself is the measurement).
		if mx := f["gateway.max_ms"]; mx < 950 || mx > 6000 {
			t.Errorf("%s: gateway.max_ms = %v, want 950..6000 (gateway call timeout 1 s)", name, mx)
		}
	case strings.HasPrefix(name, "bench/scale/"):
		is("gateway.open_errors", 0)
		is("gateway.errors", 0)
		is("gateway.unanswered", 0)
		is("direct.errors", 0)
		is("crashloop.failures", 0)
		if f["crashloop.restarts"] < 1 || f["gateway.calls"] < 1 || f["direct.calls"] < 1 {
			t.Errorf("%s: %v restarts of the crash-looping backend, %v gateway and %v direct calls, want at least 1 each",
				name, f["crashloop.restarts"], f["gateway.calls"], f["direct.calls"])
		}
	}
}

func TestNamesBackend(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		text   string
		meta   map[string]any
		called string
		want   bool
	}{
		{`backend "beta" unavailable: HTTP 403`, nil, "beta_echo", true},
		{"tool call failed on backend beta: 403", nil, "beta_echo", true},
		{"call to beta_echo failed: HTTP 403", nil, "beta_echo", false},
		{"unknown tool echo@beta", nil, "echo@beta", false},
		{"upstream error", map[string]any{"vmcp/backend": "beta"}, "beta_echo", true},
		{"upstream error", map[string]any{"server": "Beta"}, "beta_echo", true},
		{"alphabeta timed out", nil, "beta_echo", false},
		{"timed out", nil, "beta_echo", false},
	} {
		if got := namesBackend(c.text, c.meta, c.called, "beta"); got != c.want {
			t.Errorf("namesBackend(%q, %v, called %q, beta) = %v, want %v", c.text, c.meta, c.called, got, c.want)
		}
	}
}

// runSplit runs cfg's steps in two halves at once, each with its own
// processes (they wait on them far more than they compute, and one after
// another they were the package's wall time), and returns the results in
// the order one run gives them: the call and open figures, then the fault
// and scale figures. Each half's progress is logged.
func runSplit(ctx context.Context, t *testing.T, cfg Config) *history.Results {
	t.Helper()
	halves := [][]string{{StepCalls, StepOpen500}, {StepErrors, StepStall, StepScale}}
	res := make([]*history.Results, len(halves))
	errs := make([]error, len(halves))
	logs := make([]strings.Builder, len(halves))
	var wg sync.WaitGroup
	for i, steps := range halves {
		c := cfg
		c.Steps, c.Progress = steps, &logs[i]
		wg.Go(func() { res[i], errs[i] = Run(ctx, c) })
	}
	wg.Wait()
	for i := range halves {
		t.Logf("steps %v:\n%s", halves[i], logs[i].String())
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	res[0].Scenarios = append(res[0].Scenarios, res[1].Scenarios...)
	return res[0]
}
