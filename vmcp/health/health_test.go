package health

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errBoom = errors.New("boom")

func TestTrackerStateSequence(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	tr := NewTracker(Thresholds{UnhealthyThreshold: 3, DegradedThreshold: 100 * time.Millisecond}, func(from, to State) {
		mu.Lock()
		seen = append(seen, string(from)+"→"+string(to))
		mu.Unlock()
	})
	steps := []struct {
		r    Result
		want State
	}{
		{Result{}, Healthy},
		{Result{Latency: 200 * time.Millisecond}, Degraded},
		{Result{}, Healthy},
		{Result{Err: errBoom}, Healthy},
		{Result{Err: errBoom}, Healthy},
		{Result{Err: errBoom}, Unhealthy},
		{Result{}, Degraded}, // first success after failures
		{Result{}, Healthy},
		{Result{Err: errBoom, Unauthenticated: true, Probe: true}, Unauthenticated},
		{Result{}, Degraded},
		{Result{Err: errBoom, Unauthenticated: true}, Degraded}, // real traffic 403 is a plain failure
	}
	for i, s := range steps {
		tr.Record(s.r)
		if got := tr.Status().State; got != s.want {
			t.Fatalf("step %d: state %s, want %s", i, got, s.want)
		}
	}
	st := tr.Status()
	if st.ConsecutiveFailures != 1 || st.LastError != "boom" {
		t.Fatalf("status %+v", st)
	}
	want := "[unknown→healthy healthy→degraded degraded→healthy healthy→unhealthy unhealthy→degraded degraded→healthy healthy→unauthenticated unauthenticated→degraded]"
	if got := fmt.Sprint(seen); got != want {
		t.Fatalf("transitions %s, want %s", got, want)
	}
}

func TestLoopProbesAndStops(t *testing.T) {
	var n atomic.Int32
	results := make(chan Result, 100)
	l := StartLoop(context.Background(), 10*time.Millisecond, time.Second, func(ctx context.Context) Result {
		n.Add(1)
		return Result{}
	}, func(r Result) { results <- r })
	deadline := time.After(5 * time.Second)
	for n.Load() < 3 {
		select {
		case <-deadline:
			t.Fatal("fewer than 3 probes in 5s")
		case <-results:
		}
	}
	l.Stop()
	// Stop waits for the loop's goroutine to end (goleak checks it is gone
	// when the package's tests finish), so no probe can follow.
	after := n.Load()
	select {
	case <-l.done:
	default:
		t.Fatal("Stop returned before the loop ended")
	}
	if n.Load() != after {
		t.Fatal("probes continued after Stop")
	}
}

func TestLoopProbeTimeoutAndStopWhileProbing(t *testing.T) {
	results := make(chan Result, 10)
	l := StartLoop(context.Background(), time.Hour, 30*time.Millisecond, func(ctx context.Context) Result {
		<-ctx.Done()
		return Result{Err: ctx.Err()}
	}, func(r Result) { results <- r })
	select {
	case r := <-results:
		if !errors.Is(r.Err, context.DeadlineExceeded) || !r.Probe {
			t.Fatalf("result %+v, want a timed-out probe", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("probe timeout not applied")
	}
	l.Stop()
}
