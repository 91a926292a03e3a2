package kit

import (
	"sync"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// Stall watching: a Stalls goroutine wakes every stallTick; a wake-up more
// than stallMin late is a stall.
const (
	stallTick = 5 * time.Millisecond
	stallMin  = 20 * time.Millisecond
)

// Stalls records the moments this process was not run: a goroutine sleeps
// 5 ms at a time, and a wake-up more than 20 ms late is a stall, from when
// it should have woken to when it did. On a loaded machine such a stall
// stops the gateway and the backends as well as the harness (the reference
// in-process and an exec gateway, run side by side, showed the same 1.3 s
// hole in their keepalive probes, at the same moment), so a timing check
// can tell an event the gateway made late from one the machine did not let
// anything run for (Overlap). Stop it when done.
type Stalls struct {
	mu    sync.Mutex
	spans [][2]time.Time

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// WatchStalls starts watching for stalls until Stop.
func WatchStalls() *Stalls {
	s := &Stalls{stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *Stalls) run() {
	defer close(s.done)
	t := time.NewTimer(stallTick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		if now.Sub(last)-stallTick > stallMin {
			s.mu.Lock()
			s.spans = append(s.spans, [2]time.Time{last.Add(stallTick), now})
			s.mu.Unlock()
		}
		last = now
		t.Reset(stallTick)
	}
}

// Stop ends the watch and waits for its goroutine. Safe to call twice.
func (s *Stalls) Stop() {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
}

// Overlap is how long this process stalled between from and to.
func (s *Stalls) Overlap(from, to time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var d time.Duration
	for _, sp := range s.spans {
		start, end := sp[0], sp[1]
		if start.Before(from) {
			start = from
		}
		if end.After(to) {
			end = to
		}
		if end.After(start) {
			d += end.Sub(start)
		}
	}
	return d
}

// Max is the longest stall seen so far.
func (s *Stalls) Max() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m time.Duration
	for _, sp := range s.spans {
		m = max(m, sp[1].Sub(sp[0]))
	}
	return m
}

// WatchStalls watches this process's stalls for the kit's latency checks
// (Net) until the returned stop is called (when the scenario ends).
func (k *Kit) WatchStalls() (stop func()) {
	k.stalls = WatchStalls()
	return k.stalls.Stop
}

// Net is how long call took, less the time this process stalled while it
// was in flight (a loaded machine did not let anything run, the gateway
// included): the whole time when no watcher runs (WatchStalls).
func (k *Kit) Net(call *history.Call) time.Duration {
	took := call.Took()
	if k.stalls == nil {
		return took
	}
	start := k.Recorder().Started().Add(call.Start.D())
	return took - k.stalls.Overlap(start, start.Add(took))
}

// StalledAround is how long this process stalled from before ahead of
// call's start to its end (0 when no watcher runs): the machine's share
// in a decision the gateway made in that window (a health probe that
// timed out).
func (k *Kit) StalledAround(call *history.Call, before time.Duration) time.Duration {
	if k.stalls == nil {
		return 0
	}
	start := k.Recorder().Started().Add(call.Start.D())
	return k.stalls.Overlap(start.Add(-before), start.Add(call.Took()))
}
