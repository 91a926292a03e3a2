package scenarios

import (
	"context"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
)

// cancelBound bounds how soon after the client's cancel the gateway must
// have cancelled beta's call (measured: 0.5–11 ms).
const cancelBound = 3 * time.Second

// cancelTrials is how many times the cancellation is tried: whether a
// gateway forwards a cancel may vary from one call to the next (one
// forwarded 1 time in 8 passed a single trial by luck), so the property
// is judged over every trial, and the count is reported.
const cancelTrials = 5

// cancelTrial is what one cancelled call showed at beta.
type cancelTrial struct {
	stalled          fakebackends.RequestRecord
	cancelled        time.Time
	end, cancelNotif *fakebackends.RequestRecord
}

// runHangCancel: a client cancels a call stalled at beta, cancelTrials
// times. What is judged is what the gateway did with beta's call, by
// beta's own log: the stalled request ended, and (on a legacy backend
// session) beta received notifications/cancelled naming that request,
// each within cancelBound of the client's cancel, in every trial. How soon
// the client got its call back is the harness's own doing (it abandons
// the call): a figure, not a check.
func runHangCancel(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	k := kit.New(ctx, env, g)
	c := k.Client(v.Revision)
	k.CheckServes("beta answers before any fault", c, c.CallTool(ctx, k.Tool(beta, "echo"), echoArgs("before")))
	k.SetFaults(beta, k.OnTool(beta, "slow", faults.Fault{Kind: faults.KindStall, Params: &faults.Stall{Stage: faults.StageBeforeHeaders}}))

	var trials []cancelTrial
	seen := map[string]bool{} // stalled records of earlier trials
	missed := 0
	for range cancelTrials {
		t, ok := cancelOnce(ctx, k, c, seen)
		if !ok {
			missed++
			continue
		}
		seen[t.stalled.ID+t.stalled.Time.String()] = true
		trials = append(trials, t)
	}
	k.Check("the slow call reaches beta", func(ck *kit.C) {
		ck.Expected("in each of %d trials, beta's slow tools/call in flight at beta (pending in its log, the stall applied) within 5 s", cancelTrials)
		ck.Observed("stalled at beta in %d of %d trials", len(trials), cancelTrials)
		ck.Expect(missed).To(gomega.BeZero(), "beta's slow tools/call stalled at beta within 5 s in %d of %d trials", len(trials), cancelTrials)
	})

	const ends, notified = "beta's stalled call ends within 3 s of the cancel",
		"beta (a legacy backend session) receives notifications/cancelled for the stalled call within 3 s of the cancel"
	if len(trials) == 0 {
		k.Inconclusive(ends, "the slow call was never seen stalled at beta: there was no backend call to cancel")
		k.Inconclusive(notified, "the slow call was never seen stalled at beta: there was no backend call to cancel")
	} else {
		endedIn, notifiedIn, legacyIn := 0, 0, 0
		var slowest, slowestNotif time.Duration
		for _, t := range trials {
			if t.end != nil {
				after := recordEnd(*t.end).Sub(t.cancelled)
				k.Recorder().MaxFigure("backend_cancelled_ms", ms(after))
				if after <= cancelBound {
					endedIn++
				}
				slowest = max(slowest, after)
			}
			if t.stalled.Protocol == string(fakebackends.ProtocolLegacy) {
				legacyIn++
				if t.cancelNotif != nil && t.cancelNotif.Time.Sub(t.cancelled) <= cancelBound {
					notifiedIn++
					slowestNotif = max(slowestNotif, t.cancelNotif.Time.Sub(t.cancelled))
				}
			}
		}
		k.Check(ends, func(ck *kit.C) {
			ck.Expected("in every trial, beta's log shows the stalled tools/call ended at most %s after the client's cancel", cancelBound)
			ck.Observed("ended within %s in %d of %d trials (the slowest %s after the cancel)", cancelBound, endedIn, len(trials), slowest.Round(10*time.Microsecond))
			ck.Expect(endedIn).To(gomega.Equal(len(trials)), "the gateway kept beta's call open after the client cancelled in %d of %d trials", len(trials)-endedIn, len(trials))
		})
		// On a legacy (2025-11-25) backend session beta is also sent
		// notifications/cancelled naming the call: the gateway forwards
		// the one the client sends (history.WithCancelNotifications, on
		// for legacy clients), or sends its own. A stateless backend
		// session has no notification to receive: ending the request is
		// the cancellation, judged above.
		if legacyIn > 0 {
			k.Check(notified, func(ck *kit.C) {
				ck.Expected("in every trial on a legacy backend session, a notifications/cancelled naming the stalled request in beta's log, at most %s after the client's cancel", cancelBound)
				ck.Observed("forwarded %d of %d (the slowest %s after the cancel)", notifiedIn, legacyIn, slowestNotif.Round(10*time.Microsecond))
				ck.Expect(notifiedIn).To(gomega.Equal(legacyIn), "notifications/cancelled reached beta in %d of %d trials", notifiedIn, legacyIn)
			})
		}
	}

	k.ClearFaults(beta)
	k.CheckOK("beta answers after the cancel", c.CallTool(ctx, k.Tool(beta, "echo"), echoArgs("after cancel")))
}

// cancelOnce starts a call of beta's slow tool, waits until it is stalled
// at beta (a pending record not in seen, the fault applied), cancels it
// and waits (at most cancelBound) for beta's log to show what the gateway
// did. ok is false when the call was never seen stalled at beta.
func cancelOnce(ctx context.Context, k *kit.Kit, c *history.Client, seen map[string]bool) (t cancelTrial, ok bool) {
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan *history.Call, 1)
	go func() { done <- c.CallTool(callCtx, k.Tool(beta, "slow"), nil) }()
	var stalled *fakebackends.RequestRecord
	kit.Until(ctx, 5*time.Second, func() bool {
		stalled = stalledCall(ctx, k.Env, k.FixtureName(beta, "slow"), seen)
		return stalled != nil
	})
	t.cancelled = time.Now()
	cancel()
	call, _ := kit.Await(ctx, done, transportBound+5*time.Second)
	k.Recorder().MaxFigure("cancel_return_ms", ms(time.Since(t.cancelled)))
	if call == nil {
		k.Note("the cancelled call did not return within %s of the cancel", transportBound+5*time.Second)
	}
	if stalled == nil {
		return t, false
	}
	t.stalled = *stalled
	legacy := stalled.Protocol == string(fakebackends.ProtocolLegacy)
	kit.Until(ctx, cancelBound, func() bool {
		t.end, t.cancelNotif = backendCancel(ctx, k.Env, *stalled, t.cancelled)
		return t.end != nil && (!legacy || t.cancelNotif != nil)
	})
	return t, true
}

// stalledCall is the record of beta's slow tools/call pending in its log
// with a fault applied, not one of seen (nil when none is).
func stalledCall(ctx context.Context, env *harness.Env, slow string, seen map[string]bool) *fakebackends.RequestRecord {
	for _, r := range kit.ReadLog(ctx, env, beta) {
		if r.Method == "tools/call" && r.Tool == slow && r.Pending && r.Fault != "" && !seen[r.ID+r.Time.String()] {
			return &r
		}
	}
	return nil
}

// backendCancel reads beta's log for what became of the stalled call:
// its record once it ended (nil while pending), and the
// notifications/cancelled naming it that arrived after the client's
// cancel (nil when none did).
func backendCancel(ctx context.Context, env *harness.Env, stalled fakebackends.RequestRecord, cancelled time.Time) (end, cancel *fakebackends.RequestRecord) {
	for _, r := range kit.ReadLog(ctx, env, beta) {
		switch {
		case r.Method == stalled.Method && r.ID == stalled.ID && r.Time.Equal(stalled.Time) && !r.Pending:
			end = &r
		case r.Method == "notifications/cancelled" && r.Cancels == stalled.ID && !r.Time.Before(cancelled) &&
			(r.SessionID == "" || stalled.SessionID == "" || r.SessionID == stalled.SessionID):
			cancel = &r
		}
	}
	return end, cancel
}

// recordEnd is when a logged request ended.
func recordEnd(r fakebackends.RequestRecord) time.Time {
	return r.Time.Add(time.Duration(r.DurationMS * float64(time.Millisecond)))
}
