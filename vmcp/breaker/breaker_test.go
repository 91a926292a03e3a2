package breaker

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTest(threshold int) (*Breaker, *clock, *[]string) {
	clk := &clock{t: time.Unix(0, 0)}
	var mu sync.Mutex
	var seen []string
	b := New(Config{FailureThreshold: threshold, OpenTimeout: time.Minute, Now: clk.Now, OnTransition: func(from, to State) {
		mu.Lock()
		seen = append(seen, string(from)+"→"+string(to))
		mu.Unlock()
	}})
	return b, clk, &seen
}

func fail(t *testing.T, b *Breaker) {
	t.Helper()
	tk, err := b.Allow()
	if err != nil {
		t.Fatalf("Allow refused: %v", err)
	}
	tk.Done(false)
}

func TestOpensAfterThresholdConsecutiveFailures(t *testing.T) {
	b, _, _ := newTest(3)
	fail(t, b)
	fail(t, b)
	tk, _ := b.Allow()
	tk.Done(true) // a success resets the count
	fail(t, b)
	fail(t, b)
	if b.State() != Closed {
		t.Fatalf("state %s after 2 consecutive failures, want closed", b.State())
	}
	fail(t, b)
	if b.State() != Open {
		t.Fatalf("state %s after 3 consecutive failures, want open", b.State())
	}
	if _, err := b.Allow(); err != ErrOpen {
		t.Fatalf("Allow while open: %v, want ErrOpen", err)
	}
}

func TestHalfOpenAdmitsExactlyOneTrialUnderConcurrency(t *testing.T) {
	b, clk, seen := newTest(1)
	fail(t, b)
	clk.Add(time.Minute)
	var admitted atomic.Int32
	var tickets = make(chan *Ticket, 50)
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if tk, err := b.Allow(); err == nil {
				admitted.Add(1)
				tickets <- tk
			}
		}()
	}
	wg.Wait()
	close(tickets)
	if admitted.Load() != 1 {
		t.Fatalf("%d trials admitted in half-open, want exactly 1", admitted.Load())
	}
	(<-tickets).Done(true)
	if b.State() != Closed {
		t.Fatalf("state %s after a successful trial, want closed", b.State())
	}
	want := []string{"closed→open", "open→half-open", "half-open→closed"}
	if len(*seen) != len(want) {
		t.Fatalf("transitions %v, want %v", *seen, want)
	}
	for i := range want {
		if (*seen)[i] != want[i] {
			t.Fatalf("transitions %v, want %v", *seen, want)
		}
	}
}

func TestFailedTrialReopensWithFreshTimeout(t *testing.T) {
	b, clk, _ := newTest(1)
	fail(t, b)
	clk.Add(time.Minute)
	fail(t, b) // the trial fails
	if b.State() != Open {
		t.Fatalf("state %s after a failed trial, want open", b.State())
	}
	clk.Add(59 * time.Second)
	if _, err := b.Allow(); err != ErrOpen {
		t.Fatal("admitted before the fresh timeout passed")
	}
	clk.Add(time.Second)
	if _, err := b.Allow(); err != nil {
		t.Fatalf("no trial after the fresh timeout: %v", err)
	}
}

func TestStaleTicketsDoNotCount(t *testing.T) {
	b, clk, _ := newTest(1)
	old, _ := b.Allow() // admitted while closed
	fail(t, b)          // opens
	clk.Add(time.Minute)
	trial, _ := b.Allow()
	old.Done(false) // a late failure from before must not reopen
	if b.State() != HalfOpen {
		t.Fatalf("stale ticket changed state to %s", b.State())
	}
	trial.Done(true)
	if b.State() != Closed {
		t.Fatalf("state %s, want closed", b.State())
	}
}

func TestDoneTwiceCountsOnce(t *testing.T) {
	b, _, _ := newTest(2)
	tk, _ := b.Allow()
	tk.Done(false)
	tk.Done(false)
	if b.State() != Closed {
		t.Fatal("one ticket counted twice")
	}
}

func TestCancelFreesTheTrial(t *testing.T) {
	b, clk, _ := newTest(1)
	fail(t, b)
	clk.Add(time.Minute)
	trial, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Allow(); err != ErrOpen {
		t.Fatal("second trial admitted")
	}
	trial.Cancel()
	if b.State() != HalfOpen {
		t.Fatalf("cancel changed state to %s", b.State())
	}
	next, err := b.Allow()
	if err != nil {
		t.Fatalf("trial slot not freed by Cancel: %v", err)
	}
	next.Done(true)
	if b.State() != Closed {
		t.Fatalf("state %s", b.State())
	}
}
