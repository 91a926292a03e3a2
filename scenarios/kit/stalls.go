package kit

import (
	"context"
	"fmt"
	"os"
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
	// cpu samples the run-queue wait of this process and of the
	// processes Watch adds (Starved).
	cpu starvation

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// WatchStalls starts watching for stalls, and sampling the CPU wait of
// this process (Starved; Watch adds others), until Stop.
func WatchStalls() *Stalls { return watchStalls(os.Getpid()) }

// WatchStallsOnly starts watching for stalls only (Starved is 0): what the
// runner gives every scenario. Sampling the CPU wait reads every thread's
// schedstat 20 times a second, which, for eight scenarios of a -race test
// process with dozens of threads, is load of its own; a scenario that
// judges by it watches for itself (keepalive).
func WatchStallsOnly() *Stalls { return watchStalls() }

// watchStalls starts a watcher sampling the CPU wait of pids.
func watchStalls(pids ...int) *Stalls {
	s := &Stalls{stop: make(chan struct{}), done: make(chan struct{})}
	for _, pid := range pids {
		s.cpu.watch(pid)
	}
	go s.run()
	return s
}

func (s *Stalls) run() {
	defer close(s.done)
	t := time.NewTimer(stallTick)
	defer t.Stop()
	last := time.Now()
	s.cpu.sample(last)
	lastSample := last
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
		if now.Sub(lastSample) >= starveTick {
			s.cpu.sample(now)
			lastSample = now
		}
		t.Reset(stallTick)
	}
}

// Stop ends the watch and waits for its goroutine. Safe to call twice.
func (s *Stalls) Stop() {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
	s.cpu.sample(time.Now())
}

// Watch adds a process (an exec gateway's) to those whose CPU starvation
// is sampled (Starved); this process is always.
func (s *Stalls) Watch(pid int) { s.cpu.watch(pid) }

// WatchGateway adds the gateway's process when it runs as one of its own
// (an exec target); an in-process gateway is this process.
func (s *Stalls) WatchGateway(gw any) {
	if p, ok := gw.(interface{ PID() int }); ok {
		s.Watch(p.PID())
	}
}

// Starved is how long the most starved of the watched processes (this
// one, an exec gateway) waited for a CPU between from and to, per CPU:
// on a loaded machine a process runs, but late, and a gateway's timer
// due in that window fired that much later through no fault of its own.
func (s *Stalls) Starved(from, to time.Time) time.Duration {
	if s == nil {
		return 0
	}
	if time.Since(to) < starveTick { // the sample after the window
		s.cpu.sample(time.Now())
	}
	return s.cpu.starved(from, to)
}

// Overlap is how long this process stalled between from and to.
func (s *Stalls) Overlap(from, to time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var d time.Duration
	for _, sp := range s.spans {
		d += within(sp, from, to)
	}
	return d
}

// within is how much of the stall sp lies between from and to.
func within(sp [2]time.Time, from, to time.Time) time.Duration {
	start, end := sp[0], sp[1]
	if start.Before(from) {
		start = from
	}
	if end.After(to) {
		end = to
	}
	return max(0, end.Sub(start))
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
// (Net) until the returned stop is called (when the scenario ends). A kit
// made under a context that carries a watcher (WithStalls: the runner
// gives every scenario one) keeps that one, and stop does nothing.
func (k *Kit) WatchStalls() (stop func()) {
	if k.stalls != nil {
		return func() {}
	}
	k.stalls = WatchStalls()
	return k.stalls.Stop
}

// stallsKey carries a scenario's stall watcher in its context.
type stallsKey struct{}

// WithStalls returns ctx carrying s: every kit made under it (New) judges
// its timing checks net of s's stalls and excuses what the machine, not
// the gateway, made late (StalledOver, StalledThrough, LateThrough). The
// runner watches every scenario this way (WatchStallsOnly), so no
// scenario judges time without knowing what the machine did meanwhile.
func WithStalls(ctx context.Context, s *Stalls) context.Context {
	return context.WithValue(ctx, stallsKey{}, s)
}

// stallsOf is the watcher ctx carries (WithStalls), or nil.
func stallsOf(ctx context.Context) *Stalls {
	s, _ := ctx.Value(stallsKey{}).(*Stalls)
	return s
}

// Net is how long call took, less the time this process stalled while it
// was in flight (a loaded machine did not let anything run, the gateway
// included): the whole time when no watcher runs (WatchStalls).
func (k *Kit) Net(call *history.Call) time.Duration {
	took := call.Took()
	if k.stalls == nil {
		return took
	}
	start := k.began(call)
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
	start := k.began(call)
	return k.stalls.Overlap(start.Add(-before), start.Add(call.Took()))
}

// Longest is the longest single stall overlapping from..to (its part
// within the window).
func (s *Stalls) Longest(from, to time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m time.Duration
	for _, sp := range s.spans {
		m = max(m, within(sp, from, to))
	}
	return m
}

// Excusing returns the stall that puts a time over bound, when there is
// one: a call that began at start and took took, over bound, in flight
// through one stall at least as long as the excess (the longest, within
// the window); 0 otherwise. Only a single stall counts, never a sum: a
// loaded -race process adds up many short late wake-ups that stopped
// nothing (summed, they let errors reported 1.2 s late pass a 1 s bound).
func (s *Stalls) Excusing(start time.Time, took, bound time.Duration) time.Duration {
	if took <= bound {
		return 0
	}
	if longest := s.Longest(start, start.Add(took)); longest >= took-bound {
		return longest
	}
	return 0
}

// StalledOver returns "" when call's time says something of the gateway
// against bound, and otherwise why not: it took longer than bound through
// a stall of this process at least as long as the excess (Excusing: the
// machine ran nothing then, the gateway included). The check is then
// inconclusive, never passed; without a watcher (WatchStalls) it is
// always judged.
func (k *Kit) StalledOver(call *history.Call, bound time.Duration) string {
	if k.stalls == nil {
		return ""
	}
	stall := k.stalls.Excusing(k.began(call), call.Took(), bound)
	if stall == 0 {
		return ""
	}
	return fmt.Sprintf("%s %s took %s against %s, and this process stalled %s at once while it was in flight (the machine ran nothing then, the gateway included): its time says nothing of the gateway",
		call.Method, call.Target, call.Took().Round(time.Millisecond), bound, stall.Round(time.Millisecond))
}

// LateThrough returns "" when an event that came took after start, over
// bound, says something of the gateway, and otherwise why not, by the
// rule OverBound applies to a call: this process stalled at once for at
// least the excess meanwhile (Excusing: nothing ran then, the gateway
// included), or, with c not nil, the slowest of controlPings pings on c's
// session right after (the gateway answers them itself) took at least the
// excess. A gateway late on an idle machine, or late while it answers
// pings at once, is judged; without a watcher (WatchStalls) only the
// pings count. (The process's CPU wait, Starved, is no excuse here: over
// a window of a second or more a loaded machine keeps every process
// waiting for hundreds of milliseconds, and a gateway that reports
// errors 1.2 s late passed as "run late" under .ci/load.)
func (k *Kit) LateThrough(c *history.Client, what string, start time.Time, took, bound time.Duration) string {
	if took <= bound || !grounded(k.Ctx) {
		return ""
	}
	late := took - bound
	if k.stalls != nil {
		if stall := k.stalls.Excusing(start, took, bound); stall > 0 {
			return fmt.Sprintf("%s came after %s, %s beyond %s, and this process stalled %s at once meanwhile (the machine ran nothing then, the gateway included)",
				what, took.Round(time.Millisecond), late.Round(time.Millisecond), bound, stall.Round(time.Millisecond))
		}
	}
	if c == nil {
		return ""
	}
	if slowest := k.slowestPing(c, late); slowest >= late {
		return fmt.Sprintf("%s came after %s, %s beyond %s, and a ping the gateway answers itself took %s right after (the slowest of %d): the machine was slower than the excess",
			what, took.Round(time.Millisecond), late.Round(time.Millisecond), bound, slowest.Round(time.Millisecond), controlPings)
	}
	return ""
}

// StalledThrough returns "" when calls, a bystander's (a backend without
// a fault), say something of the gateway, and otherwise why not: one of
// them failed, and this process stalled at once for at least half the
// gateway's call timeout while it was in flight (the machine ran nothing
// then, the gateway included: its deadline for the bystander ran out
// with it). A gateway that fails the bystander without such a stall is
// judged; without a watcher (WatchStalls) it always is.
func (k *Kit) StalledThrough(calls ...*history.Call) string {
	if k.stalls == nil {
		return ""
	}
	least := k.Env.GatewayCallTimeout() / 2
	for _, call := range calls {
		if call == nil || call.Outcome == history.OutcomeOK {
			continue
		}
		start := k.began(call)
		if stall := k.stalls.Longest(start, start.Add(call.Took())); stall >= least {
			return fmt.Sprintf("%s %s failed (%s in %s), and this process stalled %s at once while it was in flight, at least half the gateway's %s call timeout (the machine ran nothing then, the gateway included)",
				call.Method, call.Target, call.Outcome, call.Took().Round(time.Millisecond), stall.Round(time.Millisecond), k.Env.GatewayCallTimeout())
		}
	}
	return ""
}

// StalledEach says, for each of calls that StalledThrough excuses, why
// (nothing for the others).
func (k *Kit) StalledEach(calls []*history.Call) []string {
	var why []string
	for _, call := range calls {
		if w := k.StalledThrough(call); w != "" {
			why = append(why, w)
		}
	}
	return why
}

// CheckBystander judges body, with calls as evidence, a check that calls
// of a backend without a fault succeeded, unless StalledThrough says why
// their failure says nothing of the gateway: the check is then
// inconclusive. (The gateway's steady state is no premise here: a gateway
// that breaks the bystander is what the check exists to find.)
func (k *Kit) CheckBystander(name string, calls []*history.Call, body func(c *C)) {
	if why := k.StalledThrough(calls...); why != "" {
		k.Inconclusive(name, why, calls...)
		return
	}
	k.Check(name, func(c *C) {
		c.Evidence(calls...)
		body(c)
	})
}

// began is when call started, on the clock the stalls are recorded on.
func (k *Kit) began(call *history.Call) time.Time {
	return k.Recorder().Started().Add(call.Start.D())
}
