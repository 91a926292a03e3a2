package kit

import (
	"cmp"
	"fmt"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// The initialize path: a gateway that opens a backend session for a call
// (initialize, the call, close) meets a fault aimed at initialize on
// that call; one that keeps its backend sessions open never does. Checks
// of how such a gateway treats a failed initialize are their own,
// separately named steps, judged only where the backend's log shows the
// initialize the call caused.

// InitializeActed returns "" when backend's log shows an initialize that
// arrived while call was in flight with a fault applied; otherwise
// notOpened (true when no initialize arrived at all: the gateway opened
// no backend session for the call) and why.
func (k *Kit) InitializeActed(backend string, call *history.Call) (why string, notOpened bool) {
	if !grounded(k.Ctx) {
		return "", false
	}
	rec, ok, err := k.arrivalOf(backend, "initialize", call)
	switch {
	case err != nil:
		return "cannot tell whether the call opened a session with " + backend + ": " + err.Error(), false
	case !ok:
		return fmt.Sprintf("the gateway opened no %s session for the call (%s's log shows no initialize while %s %s was in flight, %s in %s): "+
			"it keeps its backend sessions open, so an initialize fault never lands on a call", backend, backend, call.Method, call.Target,
			answered(call), call.Took().Round(10*time.Microsecond)), true
	case rec.Fault == "":
		return fmt.Sprintf("the call opened a %s session, but no fault acted on its initialize (%s's log: initialize, no fault)", backend, backend), false
	}
	return "", false
}

// CheckOnInitialize judges a check about how the gateway treated a fault
// on the initialize of a backend session it opened for call: body is
// judged (with call as evidence) when backend's log shows that initialize
// with the fault applied; the check is not applicable, with the reason,
// when the gateway opened no session for the call (it keeps sessions
// open), and inconclusive otherwise, or when one of premises (further
// reasons not to judge, "" when they hold) is not "". It reports whether
// it was judged.
func (k *Kit) CheckOnInitialize(name, backend string, call *history.Call, body func(c *C), premises ...string) (judged bool) {
	why, notOpened := k.InitializeActed(backend, call)
	if notOpened && k.unsteady == "" {
		k.NotApplicable(name, why)
		return false
	}
	return k.CheckPremise(name, cmp.Or(append([]string{why}, premises...)...), call, body)
}
