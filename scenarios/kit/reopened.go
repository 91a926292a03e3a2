package kit

import (
	"fmt"
	"strings"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// excusedByReopen counts the failures among failures that the gateway's
// re-opening of its backend session explains, and says so in words.
//
// A fault can break the gateway's backend session as it ends: a mid_body
// stall's cut event, completed at the clear, fails a legacy SSE session's
// stream. The gateway must then open another session, and meanwhile a
// call can fail without any recovery gap: one sent on the broken session
// (beta's log has it there, after the clear), or one that waited for the
// new session until its deadline (it took at least half the gateway's
// call timeout, and began before the new session's first request reached
// the backend; or it reached the backend on the new session, but its
// whole call timeout had run out before that session's first request).
// This holds only when ok, the call that served again, arrived on a
// session whose first request came after since (the clear).
// A gateway that answers calls itself with errors after the fault (they
// never reach the backend, and do not wait) is not excused.
func (k *Kit) excusedByReopen(backend string, since time.Time, failures []*history.Call, ok *history.Call) (n int, what string) {
	if !grounded(k.Ctx) || ok == nil {
		return 0, ""
	}
	rec, arrived, err := k.Arrival(backend, ok)
	if err != nil || !arrived || rec.SessionID == "" {
		return 0, ""
	}
	reqs := k.BackendLog(backend)
	var first time.Time
	var firstMethod string
	for _, r := range reqs {
		if r.SessionID == rec.SessionID {
			first, firstMethod = r.Time, r.Method
			break
		}
	}
	if first.IsZero() || first.Before(since) {
		return 0, ""
	}
	started, timeout := k.Recorder().Started(), k.Env.GatewayCallTimeout()
	var onBroken, waited int
	var others []string // the failures not excused, described
	for _, f := range failures {
		arr, reached, err := k.Arrival(backend, f)
		begun := started.Add(f.Start.D())
		switch {
		case err != nil:
			others = append(others, fmt.Sprintf("one whose arrival is unknown (%v)", err))
		case reached && arr.SessionID != rec.SessionID && !arr.Time.Before(since):
			onBroken++
		case !reached && f.Took() >= timeout/2 && begun.Before(first):
			waited++
		case reached && arr.SessionID == rec.SessionID && f.Took() >= timeout && !begun.Add(timeout).After(first):
			// Its deadline ran out before the new session's first request
			// reached the backend; the gateway sent it on once the session
			// was open, and failed it: it too waited for the new session.
			waited++
		case reached:
			others = append(others, fmt.Sprintf("%s in %s, %s after the clear, reaching %s %s after the clear on %s",
				f.Outcome, f.Took().Round(time.Millisecond), begun.Sub(since).Round(time.Millisecond), backend,
				arr.Time.Sub(since).Round(time.Millisecond), map[bool]string{true: "the new session", false: "another session"}[arr.SessionID == rec.SessionID]))
		default:
			others = append(others, fmt.Sprintf("%s in %s, %s after the clear, never reaching %s",
				f.Outcome, f.Took().Round(time.Millisecond), begun.Sub(since).Round(time.Millisecond), backend))
		}
	}
	n = onBroken + waited
	what = fmt.Sprintf("%d of them while the gateway re-opened its session with %s (%s's log: the session that served again began with %s, %s after the clear): "+
		"%d sent on the broken session, %d timed out waiting for the new one",
		n, backend, backend, firstMethod, first.Sub(since).Round(time.Millisecond), onBroken, waited)
	if len(others) > 0 {
		what += "; not excused: " + strings.Join(others, "; ")
	}
	return n, what
}

// describeFailures says, for each of failures, what it was and what
// backend's log shows of it: when it began after since (the clear), and
// whether it reached backend, on which session, with a fault applied or
// not. A recovery check that fails says so, to be read without the log.
func (k *Kit) describeFailures(backend string, since time.Time, failures []*history.Call) string {
	started := k.Recorder().Started()
	var out []string
	for _, f := range failures {
		begun := started.Add(f.Start.D())
		d := fmt.Sprintf("%s in %s, %s after the clear (%s)", f.Outcome, f.Took().Round(time.Millisecond), begun.Sub(since).Round(time.Millisecond), Excerpt(f.Text(), 100))
		arr, reached, err := k.Arrival(backend, f)
		switch {
		case err != nil:
			d += fmt.Sprintf(", arrival unknown (%v)", err)
		case !reached:
			d += ", never reaching " + backend
		default:
			d += fmt.Sprintf(", reaching %s %s after the clear on session %q", backend, arr.Time.Sub(since).Round(time.Millisecond), Excerpt(arr.SessionID, 12))
			if arr.Fault != "" {
				d += " with the fault " + arr.Fault + " still applied"
			}
		}
		out = append(out, d)
	}
	return strings.Join(out, "; ")
}
