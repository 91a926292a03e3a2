package keepalive

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeTarget is a backend session whose probes succeed or fail on command.
type fakeTarget struct {
	mu     sync.Mutex
	fail   bool
	stall  bool
	probes []time.Time
	tools  map[string]bool
}

func (f *fakeTarget) probe(ctx context.Context) error {
	f.mu.Lock()
	f.probes = append(f.probes, time.Now())
	fail, stall := f.fail, f.stall
	f.mu.Unlock()
	if stall {
		<-ctx.Done()
		return ctx.Err()
	}
	if fail {
		return errors.New("backend down")
	}
	return nil
}
func (f *fakeTarget) Ping(ctx context.Context) error               { return f.probe(ctx) }
func (f *fakeTarget) CallTool(ctx context.Context, _ string) error { return f.probe(ctx) }
func (f *fakeTarget) HasTool(name string) bool                     { return f.tools[name] }
func (f *fakeTarget) set(fail bool)                                { f.mu.Lock(); f.fail = fail; f.mu.Unlock() }
func (f *fakeTarget) count() int                                   { f.mu.Lock(); defer f.mu.Unlock(); return len(f.probes) }
func (f *fakeTarget) times() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.probes...)
}

// counts is a Recorder that counts.
type counts struct {
	mu                            sync.Mutex
	attempts, successes, disabled int
	failures                      map[string]int
}

func newCounts() *counts                { return &counts{failures: map[string]int{}} }
func (c *counts) Attempt()              { c.mu.Lock(); c.attempts++; c.mu.Unlock() }
func (c *counts) Success(time.Duration) { c.mu.Lock(); c.successes++; c.mu.Unlock() }
func (c *counts) AutoDisabled()         { c.mu.Lock(); c.disabled++; c.mu.Unlock() }
func (c *counts) Failure(r string, _ time.Duration) {
	c.mu.Lock()
	c.failures[r]++
	c.mu.Unlock()
}
func (c *counts) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("attempts=%d successes=%d failures=%v disabled=%d", c.attempts, c.successes, c.failures, c.disabled)
}

func TestParseMethod(t *testing.T) {
	for in, want := range map[string]string{"": "none", "none": "none", "ping": "ping", "tool:echo": "tool:echo"} {
		m, err := ParseMethod(in)
		if err != nil || m.String() != want {
			t.Errorf("ParseMethod(%q) = %v, %v", in, m, err)
		}
	}
	for _, bad := range []string{"tool:", "pong", "tool"} {
		if _, err := ParseMethod(bad); err == nil {
			t.Errorf("ParseMethod(%q) accepted", bad)
		}
	}
}

func TestJitterBounds(t *testing.T) {
	// Extreme random values give the bounds exactly.
	for _, r := range []float64{0, 0.999999} {
		k := &Keeper{cfg: Config{Interval: 100 * time.Millisecond, Jitter: 20 * time.Millisecond, Rand: func() float64 { return r }}}
		if d := k.firstDelay(); d < 0 || d >= 25*time.Millisecond {
			t.Errorf("first delay %s outside [0, interval/4)", d)
		}
		if d := k.nextDelay(); d < 80*time.Millisecond || d > 120*time.Millisecond {
			t.Errorf("next delay %s outside interval ± jitter", d)
		}
	}
	// The cadence is counted from each probe's start: a probe that took
	// 30 ms leaves 70 ms (interval 100 ms, no jitter) to the next, one
	// that outlasted the interval none.
	k := &Keeper{cfg: Config{Interval: 100 * time.Millisecond, Rand: func() float64 { return 0.5 }}}
	for took, want := range map[time.Duration]time.Duration{0: 100 * time.Millisecond, 30 * time.Millisecond: 70 * time.Millisecond, 150 * time.Millisecond: 0} {
		if got := k.untilNext(took); got != want {
			t.Errorf("after a probe that took %s: next in %s, want %s", took, got, want)
		}
	}
	// Real timing: probes land within the bounds, with generous slack for
	// scheduling (the figures are logged).
	target := &fakeTarget{}
	start := time.Now()
	k = Start(context.Background(), Config{Method: Method{Kind: "ping"}, Interval: 40 * time.Millisecond, Jitter: 10 * time.Millisecond}, target, newCounts(), nil)
	testwait.For(t, 5*time.Second, "4 probes", func() bool { return target.count() >= 4 })
	k.Stop()
	ts := target.times()
	first := ts[0].Sub(start)
	if first >= 10*time.Millisecond+50*time.Millisecond {
		t.Errorf("first probe after %s; want < interval/4 (10ms) plus slack", first)
	}
	// Probes are timed from their starts: one that reached the target late
	// after its start (the machine busy in between) leaves a shorter gap
	// to the next, so single gaps have 10 ms of slack and the mean none.
	for i := 1; i < len(ts); i++ {
		gap := ts[i].Sub(ts[i-1])
		if gap < 20*time.Millisecond {
			t.Errorf("gap %s < interval - jitter (30ms) - 10ms", gap)
		}
		t.Logf("probe gap %d: %s", i, gap)
	}
	if mean := ts[len(ts)-1].Sub(ts[0]) / time.Duration(len(ts)-1); mean < 30*time.Millisecond {
		t.Errorf("mean gap %s < interval - jitter (30ms)", mean)
	}
	t.Logf("first probe after %s", first)
}

func TestAutoDisableAndReprobeWithExactCounts(t *testing.T) {
	target := &fakeTarget{fail: true}
	rec := newCounts()
	k := Start(context.Background(), Config{Method: Method{Kind: "ping"}, Interval: 5 * time.Millisecond, Jitter: 1, MaxFailures: 3, ProbeAfter: 150 * time.Millisecond}, target, rec, nil)
	defer k.Stop()
	testwait.For(t, 5*time.Second, "auto-disable", func() bool { return !k.Status().Enabled })
	// Disabled: no probes until ProbeAfter.
	n := target.count()
	time.Sleep(60 * time.Millisecond)
	if target.count() != n {
		t.Fatalf("probed while disabled before probeAfter")
	}
	if got := rec.String(); got != "attempts=3 successes=0 failures=map[ping_failed:3] disabled=1" {
		t.Fatalf("after auto-disable: %s", got)
	}
	target.set(false)
	testwait.For(t, 5*time.Second, "re-enable", func() bool { return k.Status().Enabled })
	k.Stop()
	// The re-probe succeeded and re-enabled the keeper; the probes it made
	// after that (every 5 ms, until Stop) all succeeded too.
	rec.mu.Lock()
	attempts, successes, failures, disabled := rec.attempts, rec.successes, fmt.Sprint(rec.failures), rec.disabled
	rec.mu.Unlock()
	if successes < 1 || attempts != 3+successes || failures != "map[ping_failed:3]" || disabled != 1 {
		t.Fatalf("after re-probe: %s; want 3 failures, 1 auto-disable, then only successes", rec)
	}
	if st := k.Status(); st.ConsecutiveFailures != 0 || st.LastError != "" {
		t.Fatalf("status after recovery %+v", st)
	}
}

func TestTimeoutReasonAndToolNotConfigured(t *testing.T) {
	target := &fakeTarget{stall: true, tools: map[string]bool{"echo": true}}
	rec := newCounts()
	k := Start(context.Background(), Config{Method: Method{Kind: "tool", Tool: "echo"}, Interval: 5 * time.Millisecond, Timeout: 10 * time.Millisecond, MaxFailures: 1, ProbeAfter: time.Hour}, target, rec, nil)
	testwait.For(t, 5*time.Second, "timeout failure", func() bool { return !k.Status().Enabled })
	k.Stop()
	if got := rec.String(); got != "attempts=1 successes=0 failures=map[timeout:1] disabled=1" {
		t.Fatalf("stalled tool probe: %s", got)
	}

	rec2 := newCounts()
	k2 := Start(context.Background(), Config{Method: Method{Kind: "tool", Tool: "missing"}, Interval: 5 * time.Millisecond}, &fakeTarget{}, rec2, nil)
	k2.Stop()
	if got := rec2.String(); got != "attempts=1 successes=0 failures=map[keepalive_tool_name_not_configured:1] disabled=0" {
		t.Fatalf("missing tool: %s", got)
	}
	if k2.Status().Enabled {
		t.Fatal("keepalive enabled for a tool the backend lacks")
	}
}

// TestProbesRunInsideExclusive: every probe goes through the Exclusive
// function (which the gateway uses to keep probes and re-initializations
// of the same backend session apart; that exclusion is tested through the
// gateway in vmcp/exclusive_test.go).
func TestProbesRunInsideExclusive(t *testing.T) {
	var inside atomic.Bool
	var outside atomic.Int32
	target := &checkedTarget{fakeTarget: &fakeTarget{}, inside: &inside, outside: &outside}
	exclusive := func(ctx context.Context, fn func(context.Context) error) error {
		inside.Store(true)
		defer inside.Store(false)
		return fn(ctx)
	}
	k := Start(context.Background(), Config{Method: Method{Kind: "ping"}, Interval: time.Millisecond, Jitter: 1}, target, newCounts(), exclusive)
	testwait.For(t, 5*time.Second, "20 probes", func() bool { return target.count() >= 20 })
	k.Stop()
	if n := outside.Load(); n != 0 {
		t.Fatalf("%d probes ran outside Exclusive", n)
	}
}

// checkedTarget counts probes made outside Exclusive.
type checkedTarget struct {
	*fakeTarget
	inside  *atomic.Bool
	outside *atomic.Int32
}

func (c *checkedTarget) Ping(ctx context.Context) error {
	if !c.inside.Load() {
		c.outside.Add(1)
	}
	return c.fakeTarget.Ping(ctx)
}

func TestStopDuringStalledProbeIsBounded(t *testing.T) {
	target := &fakeTarget{stall: true}
	k := Start(context.Background(), Config{Method: Method{Kind: "ping"}, Interval: time.Millisecond, Timeout: time.Hour}, target, newCounts(), nil)
	testwait.For(t, 5*time.Second, "a probe", func() bool { return target.count() >= 1 })
	start := time.Now()
	k.Stop()
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Stop took %s during a stalled probe", d)
	}
}
