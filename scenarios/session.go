package scenarios

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/matchers"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
)

const sessionCallTimeout = 500 * time.Millisecond

// sessionScenarios: scenario 5, per-backend session state. Sessions exist
// on the legacy (2025-11-25) revision only.
func sessionScenarios() []Scenario {
	return variants("session", []Variant{
		{history.RevisionLegacy, fakebackends.TransportStreamableHTTP},
		{history.RevisionLegacy, fakebackends.TransportSSE},
	}, func(v Variant) Scenario {
		return Scenario{
			Description: "after a failed call the session reports that backend as error with lastError; the next success clears it; " +
				"a stalled call never leaves the session busy",
			Labels:      []string{LabelSession},
			Conditional: sessionStateChecks(),
			Timeout:     30 * time.Second,
			Topology:    twoBackendsTopology(v, sessionCallTimeout, sessionCallTimeout+5*time.Second),
			Run:         func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runSession(ctx, env, g, v) },
		}
	})
}

// sessionFaults are the faults the session scenario injects into beta's
// calls, one after another.
var sessionFaults = []struct {
	name      string
	fault     faults.Fault
	errorText string // lastError must mention it
}{
	{"403", onCall(faults.Fault{Kind: faults.KindHTTPStatus, Params: &faults.HTTPStatus{Status: 403}}), "403"},
	{"reset", onCall(faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashReset}}), ""},
	{"timeout", onCall(faults.Fault{Kind: faults.KindStall, Params: &faults.Stall{Stage: faults.StageBeforeHeaders}}), ""},
}

// sessionStateChecks are the session scenario's checks that read the
// session API: a target without it gets them not_applicable, and the
// calls (they fail under each fault, work once it clears, a stall blocks
// nothing) are judged all the same.
func sessionStateChecks() []ConditionalCheck {
	needs := []targets.Capability{targets.CapSessionAPI}
	out := []ConditionalCheck{{Name: "both backends connected at the start", Needs: needs}}
	for _, f := range sessionFaults {
		out = append(out,
			ConditionalCheck{Name: f.name + ": the session reports beta error with its lastError", Needs: needs},
			ConditionalCheck{Name: f.name + ": the next success clears beta's error", Needs: needs})
	}
	return append(out,
		ConditionalCheck{Name: "no backend state is stuck after the stall", Needs: needs},
		ConditionalCheck{Name: "beta connected at the end", Needs: needs})
}

// sessionStates reads the session's backend states, recording a
// transition for each change since the last read.
type sessionWatcher struct {
	env  *harness.Env
	id   string
	mu   sync.Mutex
	last map[string]string
}

func (w *sessionWatcher) read(ctx context.Context) (targets.BackendStates, error) {
	states, err := w.env.SessionStates(ctx, w.id)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, st := range states {
		if w.last[name] != st.State {
			w.env.Recorder().RecordTransition(history.TransitionRecord{Backend: name, Aspect: "session",
				From: w.last[name], To: st.State, Source: targets.SessionPath + w.id})
			w.last[name] = st.State
		}
	}
	return states, nil
}

// sessionRecovery bounds beta's recovery once a fault is cleared.
const sessionRecovery = time.Second

func runSession(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	k := kit.New(ctx, env, g)
	c := k.Client(v.Revision)
	g.Expect(c.SessionID()).NotTo(gomega.BeEmpty(), "a legacy client has a session")
	w := &sessionWatcher{env: env, id: c.SessionID(), last: map[string]string{}}
	settled := []string{"connected", "error"} // anything else (busy, ...) is wrong once calls have returned
	betaEcho := k.Tool(beta, "echo")
	// steady establishes steady state before a fault step; on a fresh
	// session (the old one did not recover) the watcher follows it.
	steady := func(step string) {
		c = k.Steady(c, step)
		w.id = c.SessionID()
	}

	// checkStates reads the session and judges it with body.
	checkStates := func(name string, body func(ck *kit.C, states targets.BackendStates)) {
		k.CheckIf([]targets.Capability{targets.CapSessionAPI}, name, func(ck *kit.C) {
			states, err := w.read(ctx)
			ck.Expect(err).NotTo(gomega.HaveOccurred(), "read the session")
			ck.Observed("%v", states)
			body(ck, states)
		})
	}

	k.CheckServes("beta answers before any fault", c, c.CallTool(ctx, betaEcho, echoArgs("before")))
	checkStates("both backends connected at the start", func(ck *kit.C, states targets.BackendStates) {
		ck.Expect(states).To(matchers.HaveBackendState(beta, "connected"))
		ck.Expect(states).To(matchers.HaveBackendState(alpha, "connected"))
	})

	for _, f := range sessionFaults {
		steady(f.name)
		k.SetFaults(beta, f.fault)
		k.CheckFailed(f.name+": the call fails", c.CallTool(ctx, betaEcho, echoArgs(f.name)))
		checkStates(f.name+": the session reports beta error with its lastError", func(ck *kit.C, states targets.BackendStates) {
			ck.Expect(states).To(matchers.HaveBackendState(beta, "error"), "beta after a failed call (%s)", f.name)
			ck.Expect(states[beta].LastError).NotTo(gomega.BeEmpty(), "beta's lastError after %s", f.name)
			if f.errorText != "" {
				ck.Expect(states[beta].LastError).To(gomega.ContainSubstring(f.errorText), "beta's lastError after %s", f.name)
			}
			ck.Expect(states).To(matchers.HaveBackendState(alpha, "connected"), "alpha is untouched by beta's %s", f.name)
		})
		k.ClearFaults(beta)
		k.CheckRecovery(f.name+": beta answers once cleared", c, beta, sessionRecovery, 0, f.name)
		checkStates(f.name+": the next success clears beta's error", func(ck *kit.C, states targets.BackendStates) {
			ck.Expect(states).To(matchers.HaveBackendState(beta, "connected"), "the next success clears beta's error (%s)", f.name)
		})
	}

	// A stalled call in flight: the session is not busy. Other calls in
	// the same session go through, and the state is never stuck.
	steady("the stall")
	k.SetFaults(beta, k.OnTool(beta, "slow", faults.Fault{Kind: faults.KindStall, Params: &faults.Stall{Stage: faults.StageBeforeHeaders}}))
	done := make(chan *history.Call, 1)
	slowEnded := make(chan struct{})
	slow := k.Tool(beta, "slow")
	go func() { done <- c.CallTool(ctx, slow, nil); close(slowEnded) }()
	// The two checks below judge calls made while the slow call stalls at
	// beta: it must be pending in beta's log (the stall applied) before
	// they start, and not yet returned (the gateway's call timeout is
	// sessionCallTimeout) when they end; otherwise they are inconclusive.
	var stalledRec *fakebackends.RequestRecord
	stalledAtBeta := kit.Until(ctx, 5*time.Second, func() bool {
		stalledRec = stalledCall(ctx, env, k.FixtureName(beta, "slow"), nil)
		return stalledRec != nil
	})
	// stallWhy says why a call that just ended was not made during the
	// stall ("" when it was).
	stallWhy := func() string {
		if !stalledAtBeta {
			return "beta's slow call never stalled at beta (not pending in its log, the stall applied, within 5 s)"
		}
		select {
		case <-slowEnded:
			return fmt.Sprintf("beta's slow call had returned (the gateway's call timeout is %s) before this call ended: the machine was too slow to judge it", sessionCallTimeout)
		default:
			return ""
		}
	}
	// alpha's call goes beside beta's echo, not after it: a gateway that
	// queues the echo behind the stall must not leave alpha's call no
	// stall to be judged in.
	type judgedCall struct {
		call *history.Call
		why  string
	}
	alphaDone := make(chan judgedCall, 1)
	go func() {
		call := c.CallTool(ctx, k.Tool(alpha, "echo"), echoArgs("during stall"))
		alphaDone <- judgedCall{call, stallWhy()}
	}()
	echo := c.CallTool(ctx, betaEcho, echoArgs("during stall"))
	echoWhy, queued, beside := stallWhy(), "", ""
	// The stalled call's end at the client is the other sign of the
	// stall's end (beta logs its end only when it notices the gateway
	// gave up, later on a loaded machine): awaited before echo is judged.
	stalled, _ := kit.Await(ctx, done, sessionCallTimeout+5*time.Second)
	if stalledAtBeta {
		// beta's log says what the gateway did with echo while the stall
		// held, whatever the machine's pace: queued behind it (echo
		// arrived only once the stalled call ended: the gateway's doing,
		// every time, and it fails), or sent beside it (echo arrived while
		// the stalled call was pending): judged when echo also came back
		// clearly before the stall ended at beta (stallEndMargin); back
		// only as it ended or after, a slow machine and a gateway holding
		// the answer back look the same, and the check is inconclusive
		// for that reason (TestHeldAnswerIsNotPassed). Asked also when
		// echo came back before the client saw the stalled call end: a
		// queued echo may come back just before it does.
		var late bool
		queued, beside, late = stallOrder(k, *stalledRec, echo, stalled)
		switch {
		case queued != "":
			echoWhy = ""
		case beside != "" && late:
			echoWhy = beside + ", only as the stalled call ended: a slow machine or a gateway holding its answer back, which beta's log cannot tell apart"
		case beside != "":
			echoWhy = ""
		}
	}
	k.CheckPremise("a stalled call does not block beta's other calls in the session", echoWhy, echo, func(ck *kit.C) {
		if queued != "" {
			ck.Observed("%s", queued)
		}
		ck.Expect(queued).To(gomega.BeEmpty(), "the gateway queues a call of beta behind the stalled one")
		ck.Expect(echo).To(matchers.HaveOutcome(history.OutcomeOK))
		ck.ReturnsWithin(c, echo, time.Second, "latency_ms.echo_during_stall")
	})
	alphaJudged := <-alphaDone
	alphaCall := alphaJudged.call
	k.CheckPremise("alpha answers while beta's slow call stalls", alphaJudged.why, alphaCall, func(ck *kit.C) {
		ck.Expect(alphaCall.Outcome).To(gomega.Equal(history.OutcomeOK), "%s %s ended %s after %s: %s", alphaCall.Method, alphaCall.Target, alphaCall.Outcome, alphaCall.Took(), alphaCall.Text())
	})
	if stalled == nil {
		k.Check("the stalled call fails", func(ck *kit.C) { ck.Expect(stalled).NotTo(gomega.BeNil(), "the stalled call returned") })
	} else {
		k.CheckActed("the stalled call fails", beta, stalled, func(ck *kit.C) { kit.ExpectFailed(ck, stalled) })
	}
	checkStates("no backend state is stuck after the stall", func(ck *kit.C, states targets.BackendStates) {
		for _, name := range []string{alpha, beta} {
			ck.Expect(states[name].State).To(gomega.BeElementOf(settled), "%s is settled after the stall, not stuck", name)
		}
	})
	k.ClearFaults(beta)
	k.CheckRecovery("beta answers once the stall is cleared", c, beta, sessionRecovery, 0, "stall")
	steady("the end")
	k.CheckOK("beta's slow answers after the stall cleared", c.CallTool(ctx, slow, nil))
	checkStates("beta connected at the end", func(ck *kit.C, states targets.BackendStates) {
		ck.Expect(states).To(matchers.HaveBackendState(beta, "connected"), "beta at the end")
	})
}

// stallEndMargin is how long before the stalled request's end at beta a
// call beside it must have come back to be judged: an answer held until
// the stall ended comes back within a few milliseconds of that end.
const stallEndMargin = 25 * time.Millisecond

// stallOrder says, from beta's log, how call stood to the stalled request
// at beta: queued is set when call reached beta only once the stalled
// request had ended (or not at all while it was pending): the gateway
// held it back, a deterministic defect, not a slow machine; beside is set
// when call reached beta while the stalled request was still pending (the
// gateway did not hold it back on its way), late too when call came back
// to the client only when the stall was ending (after stallEndMargin
// before the earlier of its end at beta and stalledCall's end at the
// client, when it has ended): a gateway holding the answer back until
// the stall ends gives it back right then, a few milliseconds either side
// of those ends (held, it passed the 1 s bound: the stall lasts the
// 500 ms call timeout). beta logs the end only when it notices the
// gateway gave up on the request, which a loaded machine delays past the
// margin: the client's end of the stalled call comes first then
// (TestHeldAnswerIsNotPassed failed so in CI, 2026-12-03: echo back in
// 534 ms, the stalled call failed at 545 ms, beta's end later). Both ""
// when the log cannot tell.
func stallOrder(k *kit.Kit, stalled fakebackends.RequestRecord, call, stalledCall *history.Call) (queued, beside string, late bool) {
	var end time.Time
	for _, r := range k.BackendLog(beta) {
		if r.Method == stalled.Method && r.ID == stalled.ID && r.Time.Equal(stalled.Time) && !r.Pending {
			end = recordEnd(r)
		}
	}
	arrived, ok, err := k.Arrival(beta, call)
	switch {
	case err != nil:
		return "", "", false
	case !ok && end.IsZero():
		return "", "", false // neither arrived nor ended: nothing to say
	case !ok:
		return fmt.Sprintf("%s %s never reached beta while the stalled call was pending there (it ended %s after it arrived), and came back %s after %s",
			call.Method, call.Target, end.Sub(stalled.Time).Round(time.Millisecond), call.Outcome, call.Took().Round(time.Millisecond)), "", false
	case !end.IsZero() && !arrived.Time.Before(end.Add(-5*time.Millisecond)):
		return fmt.Sprintf("%s %s reached beta only when the stalled call ended (%s after its end): the gateway queues calls to beta behind a stalled one",
			call.Method, call.Target, arrived.Time.Sub(end).Round(time.Millisecond)), "", false
	}
	back := k.Recorder().Started().Add(call.End.D())
	ended := end
	if stalledCall != nil && stalledCall.End.D() > 0 {
		if atClient := k.Recorder().Started().Add(stalledCall.End.D()); ended.IsZero() || atClient.Before(ended) {
			ended = atClient
		}
	}
	late = !ended.IsZero() && back.After(ended.Add(-stallEndMargin))
	return "", fmt.Sprintf("%s %s reached beta %s after the stalled call did, while it was pending there, and came back %s after %s",
		call.Method, call.Target, arrived.Time.Sub(stalled.Time).Round(time.Millisecond), call.Outcome, call.Took().Round(time.Millisecond)), late
}
