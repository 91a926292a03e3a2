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

// runHangCancel: a client cancels a call stalled at beta. What is judged
// is what the gateway did with beta's call, by beta's own log: the
// stalled request ended, and (on a legacy backend session) beta received
// notifications/cancelled naming that request, each within cancelBound
// of the client's cancel. How soon the client got its call back is the
// harness's own doing (it abandons the call): a figure, not a check.
func runHangCancel(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	k := kit.New(ctx, env, g)
	c := k.Client(v.Revision)
	k.CheckOK("beta answers before any fault", c.CallTool(ctx, k.Tool(beta, "echo"), echoArgs("before")))
	k.SetFaults(beta, k.OnTool(beta, "slow", faults.Fault{Kind: faults.KindStall, Params: &faults.Stall{Stage: faults.StageBeforeHeaders}}))

	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan *history.Call, 1)
	go func() { done <- c.CallTool(callCtx, k.Tool(beta, "slow"), nil) }()
	// Wait until the call is stalled at beta (its record pending in
	// beta's log, the fault applied), then give up on it.
	var stalled *fakebackends.RequestRecord
	k.Check("the slow call reaches beta", func(ck *kit.C) {
		kit.Until(ctx, 5*time.Second, func() bool {
			stalled = stalledCall(ctx, env, k.FixtureName(beta, "slow"))
			return stalled != nil
		})
		ck.Expected("beta's slow tools/call in flight at beta (pending in its log, the stall applied) within 5 s")
		ck.Expect(stalled).NotTo(gomega.BeNil(), "beta's slow tools/call stalled at beta within 5 s")
		ck.Observed("pending at beta since %s (id %s, %s backend session)", stalled.Time.Format(time.StampMicro), stalled.ID, stalled.Protocol)
	})
	cancelled := time.Now()
	cancel()
	call, _ := kit.Await(ctx, done, transportBound+5*time.Second)
	k.Figure("cancel_return_ms", ms(time.Since(cancelled)))
	if call == nil {
		k.Note("the cancelled call did not return within %s of the cancel", transportBound+5*time.Second)
	}

	const ends, notified = "beta's stalled call ends within 3 s of the cancel",
		"beta (a legacy backend session) receives notifications/cancelled for the stalled call within 3 s of the cancel"
	legacy := stalled == nil || stalled.Protocol == string(fakebackends.ProtocolLegacy)
	if stalled == nil {
		k.Inconclusive(ends, "the slow call was never seen stalled at beta: there was no backend call to cancel")
		k.Inconclusive(notified, "the slow call was never seen stalled at beta: there was no backend call to cancel")
	} else {
		var end *fakebackends.RequestRecord
		var cancelRec *fakebackends.RequestRecord
		kit.Until(ctx, cancelBound, func() bool {
			end, cancelRec = backendCancel(ctx, env, *stalled, cancelled)
			return end != nil && (!legacy || cancelRec != nil)
		})
		if end != nil { // when beta's call ended, by beta's own log
			k.Figure("backend_cancelled_ms", ms(recordEnd(*end).Sub(cancelled)))
		}
		k.Check(ends, func(ck *kit.C) {
			ck.Expected("beta's log shows the stalled tools/call (id %s) ended at most %s after the client's cancel", stalled.ID, cancelBound)
			ck.Expect(end).NotTo(gomega.BeNil(), "beta's stalled tools/call still pending %s after the client cancelled: the gateway kept beta's call open", cancelBound)
			after := recordEnd(*end).Sub(cancelled)
			ck.Observed("beta's stalled call ended %s after the client's cancel (it lasted %.1f ms, %s backend session)", after.Round(10*time.Microsecond), end.DurationMS, end.Protocol)
			ck.Expect(after).To(gomega.BeNumerically("<=", cancelBound), "beta's call ended %s after the cancel", after)
		})
		// On a legacy (2025-11-25) backend session beta is also sent
		// notifications/cancelled naming the call: the gateway forwards
		// the one the client sends (history.WithCancelNotifications, on
		// for legacy clients), or sends its own. A stateless backend
		// session has no notification to receive: ending the request is
		// the cancellation, judged above.
		if legacy {
			k.Check(notified, func(ck *kit.C) {
				ck.Expected("a notifications/cancelled naming request %s in beta's log, at most %s after the client's cancel", stalled.ID, cancelBound)
				ck.Expect(cancelRec).NotTo(gomega.BeNil(), "no notifications/cancelled naming request %s reached beta within %s of the cancel", stalled.ID, cancelBound)
				after := cancelRec.Time.Sub(cancelled)
				ck.Observed("notifications/cancelled for request %s reached beta %s after the client's cancel", cancelRec.Cancels, after.Round(10*time.Microsecond))
				ck.Expect(after).To(gomega.BeNumerically("<=", cancelBound))
			})
		}
	}

	k.ClearFaults(beta)
	k.CheckOK("beta answers after the cancel", c.CallTool(ctx, k.Tool(beta, "echo"), echoArgs("after cancel")))
}

// stalledCall is the record of beta's slow tools/call pending in its log
// with a fault applied (nil when none is).
func stalledCall(ctx context.Context, env *harness.Env, slow string) *fakebackends.RequestRecord {
	reqs, err := env.Backend(beta).Requests(ctx)
	if err != nil {
		return nil
	}
	for _, r := range reqs {
		if r.Method == "tools/call" && r.Tool == slow && r.Pending && r.Fault != "" {
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
	reqs, err := env.Backend(beta).Requests(ctx)
	if err != nil {
		return nil, nil
	}
	for _, r := range reqs {
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
