package kit

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// Grounding: a check about how the gateway treated a fault is judged only
// when the faulty backend's request log shows that the call arrived there
// with the fault applied. Otherwise the check is inconclusive, with the
// reason: a call the gateway answered itself (it had dropped the backend,
// its breaker was open, ...) says nothing about how it treats the fault.

type groundingKey struct{}

// WithoutGrounding returns a context whose scenarios judge every check on
// whatever answer came back: no steady state before a fault step, no
// proof that the fault acted on the call. It exists only to show that
// the grounding is load-bearing (a test runs gateways without it and
// finds false verdicts); never use it to judge a gateway.
func WithoutGrounding(ctx context.Context) context.Context {
	return context.WithValue(ctx, groundingKey{}, false)
}

// grounded reports whether ctx judges with grounding (the default).
func grounded(ctx context.Context) bool {
	v, ok := ctx.Value(groundingKey{}).(bool)
	return !ok || v
}

// arrivalSlack widens the end of a call's window when its arrival is
// matched by time (a process backend's times come as wall-clock JSON).
// The start is exact: a request arrives after its call started, and a
// record of the call before it (which ended before this one started)
// must never count as this call's.
const arrivalSlack = 2 * time.Millisecond

// Arrival returns backend's request-log record of call: the record
// carrying the call's marker, else the first record of the same method
// that arrived while the call was in flight (a gateway that drops the
// client's _meta). A record with a fault applied wins over one without
// (a gateway that retried). ok is false when the call never arrived.
func (k *Kit) Arrival(backend string, call *history.Call) (rec fakebackends.RequestRecord, ok bool, err error) {
	return k.arrivalOf(backend, call.Method, call)
}

// arrivalOf is Arrival for the request of method that call caused at
// backend (call.Method itself, or the initialize of a backend session
// the gateway opened for the call).
func (k *Kit) arrivalOf(backend, method string, call *history.Call) (rec fakebackends.RequestRecord, ok bool, err error) {
	return k.arrivalSince(backend, method, call, time.Time{})
}

// arrivalSince is arrivalOf with the window opened earlier, at since
// (when not zero and before the call): the initialize of a backend
// session a gateway opened for the client session the call was the
// first of, while that client session was being opened.
func (k *Kit) arrivalSince(backend, method string, call *history.Call, since time.Time) (rec fakebackends.RequestRecord, ok bool, err error) {
	b := k.Env.Backend(backend)
	if b == nil {
		return rec, false, fmt.Errorf("no backend %q", backend)
	}
	reqs, err := b.Requests(k.Ctx)
	if err != nil {
		return rec, false, fmt.Errorf("read %s's request log: %w", backend, err)
	}
	started := k.Recorder().Started()
	from := started.Add(call.Start.D())
	if !since.IsZero() && since.Before(from) {
		from = since
	}
	to := started.Add(call.End.D()).Add(arrivalSlack)
	tool := k.backendTool(b, method, call)
	var byTime []fakebackends.RequestRecord
	for _, r := range reqs {
		if call.Marker != "" && r.Marker == call.Marker && r.Method == method {
			return r, true, nil
		}
		if r.Method == method && !r.Time.Before(from) && !r.Time.After(to) && (r.Marker == "" || call.Marker == "") && (tool == "" || r.Tool == tool) {
			byTime = append(byTime, r)
		}
	}
	for _, r := range byTime {
		if r.Fault != "" {
			return r, true, nil
		}
	}
	if len(byTime) > 0 {
		return byTime[0], true, nil
	}
	return rec, false, nil
}

// backendTool is the name backend's log gives the tool a tools/call
// addressed ("" when it is not a tools/call of one of backend's fixture
// tools): a record of another tool, in flight at the same time, is not
// this call's arrival.
func (k *Kit) backendTool(b runtimes.RunningBackend, method string, call *history.Call) string {
	if method != "tools/call" || call.Method != "tools/call" {
		return ""
	}
	for _, t := range b.Info().Tools { // the script's names: FixtureName's, for this target
		if k.Tool(b.Name(), t) == call.Target || k.Tool(b.Name(), strings.TrimSuffix(t, "_"+b.Name())) == call.Target {
			return t
		}
	}
	return ""
}

// FaultActed returns "" when call arrived at backend with a fault applied
// (the log's fault field), else why the premise does not hold: "the call
// never reached beta: the gateway answered ... itself".
func (k *Kit) FaultActed(backend string, call *history.Call) string {
	if !grounded(k.Ctx) {
		return ""
	}
	rec, ok, err := k.Arrival(backend, call)
	switch {
	case err != nil:
		return "cannot tell whether the call reached " + backend + ": " + err.Error()
	case !ok:
		return fmt.Sprintf("the call never reached %s: the gateway answered %s %s itself, %s in %s",
			backend, call.Method, call.Target, answered(call), call.Took().Round(10*time.Microsecond))
	case rec.Fault == "":
		return fmt.Sprintf("the call reached %s, but no fault acted on it (%s's log: %s %s, no fault)", backend, backend, rec.Method, rec.Tool)
	}
	return stallHeld(backend, rec, k.Recorder().Started().Add(call.Start.D()), call)
}

// stallHeld returns "" unless rec's fault is a stall that did not hold:
// the backend's request ended in the first half of the call, and within
// stallHeldMin, so the gateway met a stream that ended (or a connection it
// closed at once), not a stall it had to wait out. A stall holds until the
// gateway gives up on it: a request still pending, one that lasted into
// the second half of the call (the gateway's deadline ending it, as it
// should), or one held stallHeldMin or longer (a gateway that gave up at
// its deadline and answered later still waited the stall out).
func stallHeld(backend string, rec fakebackends.RequestRecord, callStart time.Time, call *history.Call) string {
	if !strings.Contains(rec.Fault, string(faults.KindStall)) || rec.Pending {
		return ""
	}
	end := rec.Time.Add(time.Duration(rec.DurationMS * float64(time.Millisecond)))
	half := callStart.Add(call.Took() / 2)
	if !end.Before(half) || end.Sub(rec.Time) >= stallHeldMin {
		return ""
	}
	return fmt.Sprintf("the stall did not hold: %s's stalled request ended %s after it arrived, %s into a call the gateway answered after %s: the gateway met an ended stream, not a stall to wait out",
		backend, end.Sub(rec.Time).Round(10*time.Microsecond), end.Sub(callStart).Round(10*time.Microsecond), call.Took().Round(10*time.Microsecond))
}

// stallHeldMin is how long a stall must hold to have been waited out,
// whenever the gateway answered: a cut stream ends within milliseconds.
const stallHeldMin = 100 * time.Millisecond

// Resumed returns "" when backend's log shows that the gateway resumed
// call's response stream there (a GET, Last-Event-ID, with a fault
// applied: what a fault that answers only on the resumed stream needs
// to act) while call was in flight, else why not.
func (k *Kit) Resumed(backend string, call *history.Call) string {
	if !grounded(k.Ctx) {
		return ""
	}
	b := k.Env.Backend(backend)
	if b == nil {
		return fmt.Sprintf("no backend %q", backend)
	}
	reqs, err := b.Requests(k.Ctx)
	if err != nil {
		return "cannot tell whether the gateway resumed the stream at " + backend + ": " + err.Error()
	}
	started := k.Recorder().Started()
	from, to := started.Add(call.Start.D()), started.Add(call.End.D()).Add(arrivalSlack)
	gets := 0
	for _, r := range reqs {
		if r.HTTPMethod == "GET" && !r.Time.Before(from) && !r.Time.After(to) {
			if r.Fault != "" {
				return ""
			}
			gets++
		}
	}
	return fmt.Sprintf("the gateway never resumed the stream %s ended after an event id (%s's log shows no resuming GET with the fault applied while %s %s was in flight; %d other GETs): what the fault sends on the resumed stream was never sent",
		backend, backend, call.Method, call.Target, gets)
}

// Reached returns "" when call arrived at backend (with or without a
// fault), else why not; for faults that act on the backend's connection
// or process, where the backend may log nothing, an error naming the
// backend is the gateway saying it tried it.
func (k *Kit) Reached(backend string, call *history.Call) string {
	if !grounded(k.Ctx) || call.Backend == backend || k.quotesAddress(backend, call) {
		return ""
	}
	_, ok, err := k.Arrival(backend, call)
	switch {
	case err != nil:
		return "cannot tell whether the call reached " + backend + ": " + err.Error()
	case !ok:
		return fmt.Sprintf("the call never reached %s, and the gateway's answer does not name it: %s %s %s in %s",
			backend, call.Method, call.Target, answered(call), call.Took().Round(10*time.Microsecond))
	}
	return ""
}

// quotesAddress reports whether call's error quotes backend's own
// address (host:port of its MCP URL): a gateway saying "dial tcp
// 127.0.0.1:PORT: connection refused" tried that backend, even when it
// names it otherwise, and a closed listener logs nothing to show it.
func (k *Kit) quotesAddress(backend string, call *history.Call) bool {
	b := k.Env.Backend(backend)
	if b == nil || call.Outcome == history.OutcomeOK || b.URL() == "" {
		return false
	}
	u, err := url.Parse(b.URL())
	if err != nil || u.Port() == "" {
		return false
	}
	return strings.Contains(call.Text(), u.Host)
}

// answered is what the gateway answered, in words.
func answered(call *history.Call) string {
	if call.Outcome == history.OutcomeOK {
		return "a success"
	}
	return fmt.Sprintf("%s %q", call.Outcome, Excerpt(call.Text(), 160))
}

// CheckActed judges a check about how the gateway treated the fault on
// backend: body is judged (with call as evidence) only when the call
// arrived there with the fault applied (FaultActed); otherwise the check
// is inconclusive, with the reason. It reports whether the fault acted
// on the call (whether the check was judged), not whether it passed.
func (k *Kit) CheckActed(name, backend string, call *history.Call, body func(c *C)) (acted bool) {
	return k.CheckPremise(name, k.FaultActed(backend, call), call, body)
}

// CheckReached is CheckActed for faults that act on the backend's
// connection or process (down, SIGKILL, SIGSTOP), where the backend may
// log nothing: the premise is that the gateway attempted the backend
// (Reached: the call arrived, or the gateway's error names it).
func (k *Kit) CheckReached(name, backend string, call *history.Call, body func(c *C)) (reached bool) {
	return k.CheckPremise(name, k.Reached(backend, call), call, body)
}

// budgetOut says why the scenario's time budget ran out ("" while it
// runs): every check after that, and every call cut by it, is
// inconclusive for that reason (harness.WithBudget).
func (k *Kit) budgetOut() string {
	if b := harness.BudgetOut(k.Ctx); b != nil {
		return b.Error()
	}
	return ""
}

// Given scopes a premise: until end is called, every check is
// inconclusive with why (when why is not ""), as while the gateway is not
// steady. A check whose meaning depends on a state (a circuit open, a
// forged event sent) is judged only where that state was seen: the
// scenario proves the state, then judges its checks under Given.
func (k *Kit) Given(why string) (end func()) {
	prev := k.premise
	if prev == "" && why != "" && grounded(k.Ctx) {
		k.premise = why
		k.Note("premise not shown: %s", why)
	}
	return func() { k.premise = prev }
}

// CheckPremise judges body when why is "" (and the gateway is steady),
// and records the check inconclusive with the reason otherwise.
func (k *Kit) CheckPremise(name, why string, call *history.Call, body func(c *C)) bool {
	if why := cmp.Or(k.Unsteady(), k.premise, why); why != "" {
		k.Inconclusive(name, why, call)
		return false
	}
	k.Check(name, func(c *C) {
		c.Evidence(call)
		body(c)
	})
	return true
}

// Inconclusive records a check whose premise does not hold, with why and
// the calls that show it.
func (k *Kit) Inconclusive(name, why string, calls ...*history.Call) {
	why = cmp.Or(k.budgetOut(), why) // once the budget ran out, every premise fails for that reason
	ch := history.Check{Name: name, Verdict: history.CheckInconclusive, Reason: why, Expected: name}
	var records []history.CallRecord
	for _, c := range calls {
		if c != nil {
			ch.Calls = append(ch.Calls, c.Seq)
			ch.Observed = describe(c.CallRecord)
			records = append(records, c.CallRecord)
		}
	}
	k.stamp(&ch, records...)
	if na := k.notApplicable(records); na != "" {
		ch.Verdict, ch.Reason = history.CheckNotApplicable, na
	}
	k.Recorder().AddCheck(ch)
}
