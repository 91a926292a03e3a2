package kit

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/matchers"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// SteadySettle bounds how long Steady waits for every backend to answer
// through the gateway before a fault step, unless the target declares a
// longer recovery window (Recovery).
const SteadySettle = targets.DefaultRecovery

// Recovery is how long the gateway may take to return to steady state
// after a fault: the target's declared window (a profile's recovery),
// SteadySettle by default. Steady waits that long.
func (k *Kit) Recovery() time.Duration { return targets.RecoveryOf(k.Env.Target()) }

// steadyPoll is the pause between two rounds of steady-state probes.
const steadyPoll = 20 * time.Millisecond

// Steady establishes steady state before the fault step named step: every
// backend's echo tool answers through c, within SteadySettle. It returns
// the client the step goes on with: c, or, when c's session no longer
// serves every backend but a fresh session does, that fresh client, after
// recording the failed check "the session recovers from <the previous
// step>" (the gateway kept the session broken; every later step is then
// judged on its own, on the fresh session). When no session reaches
// steady state, the kit's checks are inconclusive, with the reason, until
// a later Steady succeeds.
func (k *Kit) Steady(c *history.Client, step string) *history.Client {
	if !grounded(k.Ctx) {
		return c
	}
	start := time.Now()
	// The wait is the gateway's time, not the scenario's budget's.
	defer k.Recorder().AwaitRecovery()()
	// Once steady state could not be reached, later steps look once
	// more, without waiting: the scenario stays within its timeout.
	settle := k.Recovery()
	if k.gaveUp {
		settle = 0
	}
	failing := k.steadyWithin(c, settle)
	// The time the gateway took to serve every backend again: a figure
	// (the scenario's own recovery bounds judge a slow recovery).
	k.Recorder().MaxFigure("steady_state_ms", Ms(time.Since(start)))
	if why := k.budgetOut(); why != "" {
		k.unsteady = why
		return c
	}
	if failing == nil {
		k.unsteady, k.gaveUp = "", false
		k.lastStep = step
		return c
	}
	fresh, err := k.Env.Client(k.Ctx, c.Revision(), history.WithClientName(c.Name()+"-fresh"))
	if err == nil {
		if k.steadyWithin(fresh, settle) == nil {
			k.unsteady, k.gaveUp = "", false
			// Asked again once the fresh session served: a session that
			// serves now too was slow to recover (a loaded machine), as
			// the gateway was for every session, not kept broken.
			if k.steadyWithin(c, 0) == nil {
				_ = fresh.Close(k.Ctx) // its backend sessions would be probed, counted, ...
				k.Note("steady state before %s: the session served every backend again only after %s (%s %s had failed: %s)",
					step, time.Since(start).Round(time.Millisecond), failing.Method, failing.Target, Excerpt(failing.Text(), 200))
				k.lastStep = step
				return c
			}
			restore := k.declare(history.PropSession)
			k.Check("the session recovers from "+k.lastStep, func(ck *C) {
				ck.Expected("once %s ended, the session serves every backend again within %s", k.lastStep, k.Recovery())
				ck.Evidence(failing)
				ck.Observed("the session still failed after %s (%s %s: %s), while a fresh session served every backend",
					time.Since(start).Round(time.Millisecond), failing.Method, failing.Target, Excerpt(failing.Text(), 200))
				ck.Expect(false).To(gomega.BeTrue(), "the session does not recover from %s", k.lastStep)
			})
			restore()
			k.lastStep = step
			c.Adopt(k.Ctx, fresh)
			return c
		}
	}
	k.unsteady = fmt.Sprintf("no steady state before %s: %s %s still failed %s after the previous step, on this session and on a fresh one (%s)%s",
		step, failing.Method, failing.Target, time.Since(start).Round(time.Millisecond), Excerpt(failing.Text(), 200), k.guessHint(failing.Target))
	k.Note("%s", k.unsteady)
	k.lastStep, k.gaveUp = step, true
	return c
}

// Unsteady says why the gateway is not in steady state ("" when it is):
// checks recorded now are inconclusive for that reason.
func (k *Kit) Unsteady() string { return cmp.Or(k.budgetOut(), k.unsteady) }

// Assume records that the premise of the checks that follow does not
// hold, and why: they are inconclusive until the next Steady succeeds.
func (k *Kit) Assume(why string) {
	if k.unsteady == "" && grounded(k.Ctx) {
		k.unsteady = why
		k.Note("premise lost: %s", why)
	}
}

// guessHint says, for a tool name guessed from the toolNames pattern (no
// origin marker found it), that the name may be the problem.
func (k *Kit) guessHint(exposed string) string {
	for _, b := range k.Env.Backends() {
		if k.Tool(b.Name(), "echo") == exposed && !k.Names().Found(b.Name(), "echo") {
			return fmt.Sprintf("; %q is guessed from the toolNames pattern (no origin marker found it): if the gateway names it otherwise, set toolNames in the profile", exposed)
		}
	}
	return ""
}

// steadyWithin probes every backend's echo through c until all answer in
// one round, for at most d; it returns the last failing call, or nil.
func (k *Kit) steadyWithin(c *history.Client, d time.Duration) *history.Call {
	deadline := time.Now().Add(d)
	for {
		var failing *history.Call
		for _, b := range k.Env.Backends() {
			call := c.CallTool(k.Ctx, k.Tool(b.Name(), "echo"), EchoArgs("steady state"))
			if call.Outcome != history.OutcomeOK {
				failing = call
				break
			}
		}
		if failing == nil || time.Now().After(deadline) || k.Ctx.Err() != nil {
			return failing
		}
		Sleep(k.Ctx, steadyPoll)
	}
}

// CheckRecovery judges backend's recovery from the fault step that just
// ended: it calls backend's echo through c until a call succeeds, for at
// most within. The check fails when none succeeded in time, when more
// than maxFailed calls failed first (maxFailed < 0: any number), or when
// one of those failures does not name the backend. It records the time
// to the first good call (figure recovery_ms.<figure>) and the failed
// calls (failed_calls_after.<figure>).
//
// When the backend does not serve c's session again but a fresh session
// serves it at once, the defect is the session's: it is recorded once,
// as the failed check "the session recovers from <step>" (in place of
// name), and c goes on with the fresh session (Client.Adopt), so the
// step's later checks, and every later fault, are judged on a session
// that works, never on the broken one again. When no session is served, the kit
// is unsteady: later checks are inconclusive until Steady succeeds.
func (k *Kit) CheckRecovery(name string, c *history.Client, backend string, within time.Duration, maxFailed int, figure string) bool {
	if why := k.Unsteady(); why != "" {
		k.Inconclusive(name, why)
		return false
	}
	tool := k.Tool(backend, "echo")
	defer k.declare(history.PropRecovers)()
	start := time.Now()
	// Waiting for the backend to be served again is the gateway's time,
	// not the scenario's budget's.
	defer k.Recorder().AwaitRecovery()()
	var failures []*history.Call
	var ok *history.Call
	for ok == nil && k.Ctx.Err() == nil {
		call := c.CallTool(k.Ctx, tool, EchoArgs("recovery"))
		if call.Outcome == history.OutcomeOK {
			ok = call
			break
		}
		failures = append(failures, call)
		if time.Since(start) > within || !grounded(k.Ctx) { // ungrounded: the first call only
			break
		}
		Sleep(k.Ctx, steadyPoll)
	}
	took := time.Since(start)
	if why := k.budgetOut(); why != "" && ok == nil {
		k.Inconclusive(name, why, failures...)
		return false
	}
	late := false // served again, but only once asked after a fresh session served, or after within
	k.Figure("failed_calls_after."+figure, float64(len(failures)))
	// A gateway that declares a longer recovery window (its profile's
	// recovery) is asked on until the window ends: served then, the check
	// still fails (beyond within, a true finding), but the step goes on,
	// judged, instead of every later check being inconclusive.
	if ok == nil && grounded(k.Ctx) && k.Recovery() > within {
		if again := k.servedBy(c, tool, start.Add(k.Recovery())); again != nil {
			ok, took, late = again, time.Since(start), true
		}
	}
	if ok == nil && grounded(k.Ctx) {
		fresh, served := k.freshServes(c, tool)
		if served != nil {
			// Asked again once the fresh session served: a session that
			// serves now too was slow (a loaded machine), not kept broken;
			// the check below judges its recovery.
			if again := c.CallTool(k.Ctx, tool, EchoArgs("recovery")); again.Outcome == history.OutcomeOK {
				_ = fresh.Close(k.Ctx)
				ok, served, took, late = again, nil, time.Since(start), true
			}
		}
		if served != nil {
			// The rest of the step goes on with the fresh session, as c
			// (Adopt): the broken one is judged once, here.
			defer c.Adopt(k.Ctx, fresh)
			defer k.declare(history.PropSession)()
			return k.Check("the session recovers from "+k.lastStep, func(ck *C) {
				ck.Evidence(failures...)
				ck.Evidence(served)
				ck.Expected("once %s ended, the session serves %s again within %s", k.lastStep, backend, within)
				ck.Observed("the session still failed after %s (%d calls; last: %s), while a fresh session was served at once",
					took.Round(time.Millisecond), len(failures), Excerpt(failures[len(failures)-1].Text(), 200))
				ck.Expect(false).To(gomega.BeTrue(), "the session does not recover from %s", k.lastStep)
			})
		}
	}
	if ok != nil {
		k.Figure("recovery_ms."+figure, Ms(took))
	}
	// Failures while the gateway re-opened its session with the backend
	// (the fault broke the old one) are its deadlines running out on the
	// way, not a recovery gap: they are allowed, and said.
	reopened, excused := "", 0
	since := start // the clear, when it came just before
	if !k.lastClear.IsZero() && k.lastClear.Before(start) && start.Sub(k.lastClear) < 5*time.Second {
		since = k.lastClear
	}
	if maxFailed >= 0 && len(failures) > maxFailed {
		if n, what := k.excusedByReopen(backend, since, failures, ok); what != "" {
			excused, reopened = n, "; "+what
		}
	}
	// Served again, but with more failures first than allowed, some of
	// them through a stall of the machine long enough to run a deadline
	// out (StalledThrough): without those it would pass, so it is no
	// verdict either way.
	if ok != nil && grounded(k.Ctx) && maxFailed >= 0 && len(failures)-excused > maxFailed {
		stalled := k.StalledEach(failures)
		if len(stalled) > 0 && len(failures)-excused-len(stalled) <= maxFailed {
			k.Inconclusive(name, fmt.Sprintf("%s served again after %s, %d failed call(s) first (at most %d allowed%s), %d of them while the machine ran nothing: %s",
				backend, took.Round(time.Millisecond), len(failures), maxFailed, reopened, len(stalled), strings.Join(stalled, "; ")), append(failures, ok)...)
			return false
		}
	}
	// The backend did not recover on any session: this check fails, and
	// the checks after it are inconclusive until Steady succeeds.
	defer func() {
		if ok == nil && grounded(k.Ctx) {
			k.unsteady = fmt.Sprintf("%s did not recover from %s within %s, on this session or a fresh one", backend, k.lastStep, within)
		}
	}()
	return k.Check(name, func(ck *C) {
		ck.Expected("%s serves again within %s of the end of the fault%s, and every failure in between names %s",
			backend, within, maxFailedText(maxFailed)+reopenText(maxFailed, backend), backend)
		ck.Evidence(failures...)
		ck.Evidence(ok)
		var unnamed []string
		for _, f := range failures {
			if f.Backend != backend {
				unnamed = append(unnamed, fmt.Sprintf("%s %s", f.Outcome, Excerpt(f.Text(), 120)))
			}
		}
		failed := ""
		if maxFailed >= 0 && len(failures)-excused > maxFailed && reopened == "" {
			failed = ": " + k.describeFailures(backend, since, failures)
		}
		ck.Observed("%s after %s, %d failed call(s) first%s%s%s", map[bool]string{true: "served again", false: "not served"}[ok != nil],
			took.Round(time.Millisecond), len(failures), unnamedText(unnamed), reopened, failed)
		ck.Expect(ok).NotTo(gomega.BeNil(), "%s did not serve again within %s", backend, within)
		if maxFailed >= 0 {
			ck.Expect(len(failures)-excused).To(gomega.BeNumerically("<=", maxFailed), "failed calls before %s served again", backend)
		}
		for _, f := range failures {
			ck.Expect(f).To(matchers.BeBackendUnavailable(backend), "a failure while %s recovered", backend)
		}
		// Judged last: served late, and nothing else wrong, while the
		// machine was that slow (LateThrough), is no verdict.
		if late {
			if why := k.LateThrough(c, backend+"'s recovery", start, took, within); why != "" {
				ck.Excuse("%s", why)
			}
		}
		ck.Expect(late).To(gomega.BeFalse(), "%s served again only after %s, beyond %s", backend, took.Round(time.Millisecond), within)
	})
}

// servedBy asks tool through c every lateRecoveryPoll until it succeeds
// or deadline passes: the successful call, or nil.
func (k *Kit) servedBy(c *history.Client, tool string, deadline time.Time) *history.Call {
	for time.Now().Before(deadline) && k.Ctx.Err() == nil {
		Sleep(k.Ctx, lateRecoveryPoll)
		if call := c.CallTool(k.Ctx, tool, EchoArgs("late recovery")); call.Outcome == history.OutcomeOK {
			return call
		}
	}
	return nil
}

// lateRecoveryPoll spaces the calls that wait out a declared recovery
// window (fewer than within a recovery bound: the gateway is slow anyway).
const lateRecoveryPoll = 200 * time.Millisecond

// freshServes opens a fresh session like c's and calls tool once through
// it: the session and the call when it succeeded.
func (k *Kit) freshServes(c *history.Client, tool string) (*history.Client, *history.Call) {
	fresh, err := k.Env.Client(k.Ctx, c.Revision(), history.WithClientName(c.Name()+"-fresh"))
	if err != nil {
		return nil, nil
	}
	if call := fresh.CallTool(k.Ctx, tool, EchoArgs("fresh session")); call.Outcome == history.OutcomeOK {
		return fresh, call
	}
	return nil, nil
}

func maxFailedText(n int) string {
	switch {
	case n < 0:
		return ""
	case n == 0:
		return ", with no failed call"
	}
	return fmt.Sprintf(", after at most %d failed call(s)", n)
}

// reopenText is what CheckRecovery allows beyond maxFailed.
func reopenText(maxFailed int, backend string) string {
	if maxFailed < 0 {
		return ""
	}
	return " (more only while the gateway re-opens its session with " + backend + ")"
}

func unnamedText(unnamed []string) string {
	if len(unnamed) == 0 {
		return ""
	}
	return "; not naming the backend: " + strings.Join(unnamed, "; ")
}

// CheckServes judges a check that call, made on c before any fault (the
// gateway's steady state), succeeded. A failure that ran out a deadline
// (the call took at least half the gateway's call timeout: the one failure
// a slow machine makes of a healthy backend) is no verdict alone: every
// backend is asked again on c (Steady's probes, within Recovery, on the
// gateway's time, not the budget's), and call's tool (an echo) once more
// as the first call of a fresh session (call was its session's first: a gateway
// that opens a backend lazily and runs its first call out fails it every
// time). When all of them answer, the check is inconclusive with the first
// failure as its evidence (a loaded machine and a gateway that times out a
// call now and then look the same in one call); when one does not, it
// fails with that call as evidence. Any other failure fails at once.
func (k *Kit) CheckServes(name string, c *history.Client, call *history.Call) bool {
	if call.Outcome == history.OutcomeOK || k.Unsteady() != "" || k.premise != "" || !grounded(k.Ctx) ||
		call.Took() < k.Env.GatewayCallTimeout()/2 {
		return k.CheckOK(name, call)
	}
	start := time.Now()
	failing := func() *history.Call {
		defer k.Recorder().AwaitRecovery()()
		if f := k.steadyWithin(c, k.Recovery()); f != nil {
			return f
		}
		fresh, err := k.Env.Client(k.Ctx, c.Revision(), history.WithClientName(c.Name()+"-first"))
		if err != nil {
			return nil // the session opens are judged elsewhere
		}
		defer func() { _ = fresh.Close(k.Ctx) }()
		if first := fresh.CallTool(k.Ctx, call.Target, EchoArgs("first call")); first.Outcome != history.OutcomeOK {
			return first
		}
		return nil
	}()
	if failing != nil {
		return k.Check(name, func(ck *C) {
			ck.Evidence(call)
			ck.Observed("%s %s ended %s after %s before any fault, and asked again %s %s (%s) ended %s after %s: %s",
				call.Method, call.Target, call.Outcome, call.Took().Round(time.Millisecond),
				failing.Method, failing.Target, failing.Client, failing.Outcome, failing.Took().Round(time.Millisecond), Excerpt(failing.Text(), 200))
			ExpectOK(ck, failing)
		})
	}
	k.Inconclusive(name, fmt.Sprintf("%s %s ended %s after %s, at least half the gateway's %s call timeout, and every backend answered on the same session, and the same call as a fresh session's first, %s later: a loaded machine or a gateway that times out a call now and then, which one call cannot tell apart",
		call.Method, call.Target, call.Outcome, call.Took().Round(time.Millisecond), k.Env.GatewayCallTimeout(), time.Since(start).Round(time.Millisecond)), call)
	return false
}
