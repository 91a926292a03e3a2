package kit

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// The initialize path: a gateway that opens a backend session for a call
// (initialize, the call, close) meets a fault aimed at initialize on
// that call; one that keeps its backend sessions open never does. Checks
// of how such a gateway treats a failed initialize are their own,
// separately named steps, judged only where the backend's log shows the
// initialize the call caused.

// SessionOpeners are the requests a gateway may open a backend session
// with: initialize (2025-11-25 and before), or server/discover (the
// stateless 2026-07-28 revision's first request, after which a client
// may fall back to initialize). Faults aimed at "the initialize path"
// are aimed at each.
var SessionOpeners = []string{"initialize", "server/discover"}

// InitializeActed returns "" when backend's log shows a session opener
// (SessionOpeners) that arrived while call was in flight with a fault
// applied; otherwise notOpened (true when no opener arrived at all: the
// gateway opened no backend session for the call) and why.
func (k *Kit) InitializeActed(backend string, call *history.Call) (why string, notOpened bool) {
	return k.initializeActed(backend, call, k.openedWith[call])
}

// initializeActed is InitializeActed with the window opened at since (the
// call was the first of a client session opened then: OpeningCall).
func (k *Kit) initializeActed(backend string, call *history.Call, since time.Time) (why string, notOpened bool) {
	if !grounded(k.Ctx) {
		return "", false
	}
	var seen []string
	for _, opener := range SessionOpeners {
		rec, ok, err := k.arrivalSince(backend, opener, call, since)
		switch {
		case err != nil:
			return "cannot tell whether the call opened a session with " + backend + ": " + err.Error(), false
		case ok && rec.Fault != "":
			return "", false
		case ok:
			seen = append(seen, opener)
		}
	}
	if len(seen) > 0 {
		return fmt.Sprintf("the call opened a %s session, but no fault acted on its opening (%s's log: %v, no fault)", backend, backend, seen), false
	}
	return fmt.Sprintf("the gateway opened no %s session for the call (%s's log shows no %v while %s %s was in flight, %s in %s)", backend, backend,
		SessionOpeners, call.Method, call.Target, answered(call), call.Took().Round(10*time.Microsecond)), true
}

// OnSessionOpeners aims f at every request a gateway may open a backend
// session with (SessionOpeners): one fault each.
func OnSessionOpeners(f faults.Fault) []faults.Fault {
	out := make([]faults.Fault, len(SessionOpeners))
	for i, m := range SessionOpeners {
		out[i] = f
		out[i].Match = faults.Match{Method: m}
	}
	return out
}

// OpeningCall makes the call of backend's tool the initialize-path checks
// judge, with f set on every session opener of backend (then cleared):
// first through c; when the gateway opened no backend session for that
// call (it keeps one per client session, or for good), once more through
// a fresh client session, which a gateway that opens a backend session
// per client session opens with it (at the client's initialize) or on its
// first call: an opener from the client session's opening to the call's
// end counts (InitializeActed). It returns the call to
// judge, and, when neither call opened a backend session, why (the
// evidence that this gateway has no initialize path to fault).
func (k *Kit) OpeningCall(c *history.Client, backend, tool string, f faults.Fault, args map[string]any) (call *history.Call, none string) {
	k.SetFaults(backend, OnSessionOpeners(f)...)
	defer k.ClearFaults(backend)
	call = c.CallTool(k.Ctx, tool, args)
	why, notOpened := k.InitializeActed(backend, call)
	if !notOpened || !grounded(k.Ctx) {
		return call, ""
	}
	// The window opens with the client session: a gateway that opens its
	// backend sessions with the client's (at its initialize) meets the
	// fault then, and answers the call from what that left.
	opening := time.Now()
	fresh, err := k.Env.Client(k.Ctx, c.Revision(), history.WithClientName(c.Name()+"-opening"))
	if err != nil {
		return call, ""
	}
	defer func() { _ = fresh.Close(k.Ctx) }()
	listed, lerr := fresh.ToolNames(k.Ctx)
	again := fresh.CallTool(k.Ctx, tool, args)
	if k.openedWith == nil {
		k.openedWith = map[*history.Call]time.Time{}
	}
	k.openedWith[again] = opening
	whyFresh, notOpenedFresh := k.InitializeActed(backend, again)
	if notOpenedFresh {
		return call, why + "; nor for the first call of a fresh client session: " + whyFresh + ": it keeps its backend sessions open, so no fault on a session's opening lands on a call"
	}
	if whyFresh == "" && lerr == nil && !slices.Contains(listed, tool) {
		// The fault failed the backend session the gateway opened with
		// the client's, and the gateway left the backend's tools out of
		// that session: a call of one is a call of a tool it does not
		// offer, which says nothing of how it names a failing backend.
		return again, fmt.Sprintf("the fault failed the %s session the gateway opened with a fresh client session's, and the gateway left %s's tools out of that session (its tools/list: %d tools, not %s): a call of %s there is a call of a tool it does not offer",
			backend, backend, len(listed), tool, tool)
	}
	return again, ""
}

// CheckOnInitialize judges a check about how the gateway treated a fault
// on the initialize of a backend session it opened for call: body is
// judged (with call as evidence) when backend's log shows that initialize
// with the fault applied; the check is not applicable, with the reason,
// when the gateway opened no session for the call (it keeps sessions
// open), and inconclusive otherwise, or when one of premises (further
// reasons not to judge, "" when they hold) is not "". It reports whether
// it was judged.
func (k *Kit) CheckOnInitialize(name, backend string, call *history.Call, none string, body func(c *C), premises ...string) (judged bool) {
	if none != "" && k.unsteady == "" && k.budgetOut() == "" {
		k.NotApplicable(name, none)
		return false
	}
	why, _ := k.InitializeActed(backend, call)
	return k.CheckPremise(name, cmp.Or(append([]string{why}, premises...)...), call, body)
}
