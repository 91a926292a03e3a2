package runner

import (
	"context"
	"slices"
	"sync"
	"time"
)

// prioSem is a weighted semaphore whose waiters are served by priority,
// the highest first (the longest expected run: it ends with the others),
// then in the order they came. The head waiter blocks those behind it
// until its weight is free, so a heavy waiter is never starved.
type prioSem struct {
	mu      sync.Mutex
	free    int64
	seq     uint64
	waiters []*prioWaiter // sorted: priority descending, then seq
}

type prioWaiter struct {
	w     int64
	prio  time.Duration
	seq   uint64
	ready chan struct{} // closed once the weight is granted
}

func newPrioSem(n int64) *prioSem { return &prioSem{free: n} }

// acquire takes w, waiting behind the waiters of higher priority (and of
// equal priority that came first) until it is free or ctx ends.
func (s *prioSem) acquire(ctx context.Context, w int64, prio time.Duration) error {
	s.mu.Lock()
	if len(s.waiters) == 0 && s.free >= w {
		s.free -= w
		s.mu.Unlock()
		return nil
	}
	s.seq++
	me := &prioWaiter{w: w, prio: prio, seq: s.seq, ready: make(chan struct{})}
	i, _ := slices.BinarySearchFunc(s.waiters, me, func(a, b *prioWaiter) int {
		if a.prio != b.prio {
			if a.prio > b.prio {
				return -1
			}
			return 1
		}
		if a.seq < b.seq {
			return -1
		}
		return 1
	})
	s.waiters = slices.Insert(s.waiters, i, me)
	s.mu.Unlock()
	select {
	case <-me.ready:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		select {
		case <-me.ready: // granted meanwhile: give it back
			s.free += w
		default:
			s.waiters = slices.DeleteFunc(s.waiters, func(x *prioWaiter) bool { return x == me })
		}
		s.grantLocked()
		s.mu.Unlock()
		return context.Cause(ctx)
	}
}

// release gives w back.
func (s *prioSem) release(w int64) {
	s.mu.Lock()
	s.free += w
	s.grantLocked()
	s.mu.Unlock()
}

func (s *prioSem) grantLocked() {
	for len(s.waiters) > 0 && s.waiters[0].w <= s.free {
		head := s.waiters[0]
		s.free -= head.w
		close(head.ready)
		s.waiters = s.waiters[1:]
	}
}
