package reports

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// window is one fault window on a backend: from the action that broke it
// (set, inject, kill, pause) to the one that mended it (clear, resume,
// respawn), or a point action (restart, expire) with its own duration.
type window struct {
	Backend string
	Action  string // the action that opened it
	Detail  string // fault kinds and parameters, redacted
	Closer  string // the action that closed it; "" when still active at the end
	Start   time.Duration
	End     time.Duration
	Point   bool   // restart, expire: a moment, not a period
	Errors  string // failed fault actions
}

// Label names the window in tables and tooltips.
func (w window) Label() string {
	s := w.Action
	if w.Detail != "" {
		s += " " + w.Detail
	}
	return w.Backend + ": " + s
}

// faultWindows pairs a scenario's fault actions into windows, in start
// order. A window still open when the scenario ended lasts to its end.
func faultWindows(events []history.Event, end time.Duration) []window {
	var out []window
	open := map[string]int{} // backend -> index in out of its open window
	closeAt := func(b string, at time.Duration, closer string) {
		if i, ok := open[b]; ok {
			out[i].End, out[i].Closer = max(at, out[i].Start), closer
			delete(open, b)
		}
	}
	for _, e := range events {
		f := e.Fault
		if e.Kind != history.EventFault || f == nil {
			continue
		}
		at, took := e.At.D(), f.Duration.D()
		detail := Redact(f.Detail)
		if detail == "" && len(f.Kinds) > 0 {
			detail = strings.Join(f.Kinds, ",")
		}
		errText := ""
		if f.Error != "" {
			errText = f.Action + " failed: " + Redact(f.Error)
		}
		switch f.Action {
		case "set", "inject", "kill", "pause":
			if f.Action == "set" && len(f.Kinds) == 0 && f.Detail == "" {
				closeAt(f.Backend, at, "set (none)")
				continue
			}
			if i, ok := open[f.Backend]; ok && f.Action == "inject" {
				out[i].Detail = strings.TrimSpace(out[i].Detail + "; +" + detail)
				continue
			}
			closeAt(f.Backend, at, f.Action)
			open[f.Backend] = len(out)
			out = append(out, window{Backend: f.Backend, Action: f.Action, Detail: detail, Start: at, End: end, Errors: errText})
		case "clear", "resume", "respawn":
			if _, ok := open[f.Backend]; ok {
				closeAt(f.Backend, at+took, f.Action)
			} else if f.Action == "respawn" {
				out = append(out, window{Backend: f.Backend, Action: f.Action, Start: at, End: at + took, Point: true, Closer: f.Action, Errors: errText})
			}
		default: // restart, expire and any new action: a moment
			out = append(out, window{Backend: f.Backend, Action: f.Action, Detail: detail, Start: at, End: at + took, Point: true, Closer: f.Action, Errors: errText})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// outcomeClass is how the report colours a call: ok, an error naming the
// backend, an error not naming it, a timeout, or a call dropped without an
// answer.
func outcomeClass(c *history.CallRecord) string {
	switch {
	case c.Outcome == history.OutcomeOK:
		return "ok"
	case c.Outcome == history.OutcomeTimeout:
		return "timeout"
	case c.Outcome == history.OutcomeDropped:
		return "dropped"
	case c.Backend != "" || c.Outcome == history.OutcomeBackendUnavailable:
		return "named"
	default:
		return "unnamed"
	}
}

// outcomeText says in words what outcomeClass means.
var outcomeText = map[string]string{
	"ok":      "ok",
	"named":   "error naming the backend",
	"unnamed": "error not naming the backend",
	"timeout": "timeout",
	"dropped": "dropped without an answer",
}

// phaseStats are latency quantiles of the calls started in one phase.
type phaseStats struct {
	N, Errors          int
	P50, P90, P99, Max string
}

// faultView is one fault window as the report shows it: what was done,
// what the client saw before, during and after, and how long recovery
// took.
type faultView struct {
	Label, Span, Duration string
	Active                bool
	Before, During, After phaseStats
	FirstError, Recovery  string
	FailedAfter           int
	Errors                string

	backend      string
	recoveryTook time.Duration // -1: nothing to recover from
	unrecovered  bool
}

// storyOf sums up a scenario's faults in one line: the backends broken,
// how many windows, the slowest recovery and any that never recovered.
func storyOf(fs []faultView) string {
	if len(fs) == 0 {
		return ""
	}
	var backends []string
	slowest, unrec, failedAfter := -1, 0, 0
	for i, f := range fs {
		if !slices.Contains(backends, f.backend) {
			backends = append(backends, f.backend)
		}
		if f.recoveryTook >= 0 && (slowest < 0 || f.recoveryTook > fs[slowest].recoveryTook) {
			slowest = i
		}
		if f.unrecovered {
			unrec++
		}
		failedAfter += f.FailedAfter
	}
	s := fmt.Sprintf("%d fault window(s) on %s", len(fs), strings.Join(backends, ", "))
	if slowest >= 0 {
		s += fmt.Sprintf("; slowest recovery %s (%s)", fmtDur(fs[slowest].recoveryTook), fs[slowest].Label)
	}
	if failedAfter > 0 {
		s += fmt.Sprintf("; %d call(s) failed after a fault had ended", failedAfter)
	}
	if unrec > 0 {
		s += fmt.Sprintf("; %d never recovered", unrec)
	}
	if !slices.ContainsFunc(fs, func(f faultView) bool { return f.FirstError != "no failed call" }) {
		s += "; no call failed"
	}
	return s
}

// analyseWindows computes each window's latency phases and recovery.
func analyseWindows(ws []window, calls []*history.CallRecord, end time.Duration) []faultView {
	out := make([]faultView, 0, len(ws))
	for i, w := range ws {
		prevEnd := time.Duration(0)
		for _, p := range ws[:i] {
			prevEnd = max(prevEnd, min(p.End, w.Start))
		}
		nextStart := end
		for _, n := range ws[i+1:] {
			if n.Start >= w.End {
				nextStart = min(nextStart, n.Start)
			}
		}
		fv := faultView{Label: w.Label(), Active: w.Closer == "", Errors: w.Errors,
			Span:     fmt.Sprintf("%s – %s", fmtDur(w.Start), fmtDur(w.End)),
			Duration: fmtDur(w.End - w.Start)}
		fv.Before = stats(calls, prevEnd, w.Start)
		fv.During = stats(calls, w.Start, max(w.End, w.Start+1))
		fv.After = stats(calls, w.End, max(nextStart, w.End))
		fv.FirstError, fv.Recovery, fv.FailedAfter, fv.recoveryTook = recovery(w, calls, nextStart)
		fv.backend, fv.unrecovered = w.Backend, strings.HasPrefix(fv.Recovery, "not recovered")
		out = append(out, fv)
	}
	return out
}

// recovery finds the first failed call from the window's start (the time
// to error) and, for the targets that failed, the first ok call after the
// window closed: the time from the window's end to that call's end is the
// recovery time; failedAfter counts the failures to those targets between.
func recovery(w window, calls []*history.CallRecord, horizon time.Duration) (firstErr, rec string, failedAfter int, took time.Duration) {
	took = -1
	affected := map[string]bool{}
	for _, c := range calls {
		if c.Start.D() < w.Start || c.Start.D() >= horizon || c.Outcome == history.OutcomeOK {
			continue
		}
		if c.Backend != "" && c.Backend != w.Backend {
			continue
		}
		if firstErr == "" {
			firstErr = fmt.Sprintf("%s after the fault started (%s)", fmtDur(c.End.D()-w.Start), callName(c))
		}
		affected[c.Method+" "+c.Target] = true
	}
	if len(affected) == 0 {
		return "no failed call", "no call failed", 0, took
	}
	switch w.Closer {
	case "":
		return firstErr, "fault active until the end", 0, took
	case "set", "inject", "kill", "pause":
		return firstErr, "replaced by the next fault (" + w.Closer + ")", 0, took
	}
	for _, c := range calls {
		if c.Start.D() < w.End || !affected[c.Method+" "+c.Target] {
			continue
		}
		if c.Outcome == history.OutcomeOK {
			took := max(c.End.D()-w.End, 0)
			return firstErr, fmt.Sprintf("%s after %s (%s ok)", fmtDur(took), w.Closer, callName(c)), failedAfter, took
		}
		failedAfter++
	}
	if failedAfter == 0 {
		return firstErr, "not observed: no call to a target that failed after " + w.Closer, 0, took
	}
	return firstErr, fmt.Sprintf("not recovered by the end of the scenario (%d failed after %s)", failedAfter, w.Closer), failedAfter, took
}

func callName(c *history.CallRecord) string {
	if c.Target != "" {
		return c.Method + " " + c.Target
	}
	return c.Method
}

// stats computes the phase statistics of calls started in [from, to).
func stats(calls []*history.CallRecord, from, to time.Duration) phaseStats {
	var ds []time.Duration
	errs := 0
	for _, c := range calls {
		if s := c.Start.D(); s >= from && s < to {
			ds = append(ds, c.Duration.D())
			if c.Outcome != history.OutcomeOK {
				errs++
			}
		}
	}
	if len(ds) == 0 {
		return phaseStats{P50: "–", P90: "–", P99: "–", Max: "–"}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	q := func(p float64) string {
		i := int(p*float64(len(ds))+0.999999) - 1
		return fmtDur(ds[min(max(i, 0), len(ds)-1)])
	}
	return phaseStats{N: len(ds), Errors: errs, P50: q(0.5), P90: q(0.9), P99: q(0.99), Max: fmtDur(ds[len(ds)-1])}
}

// fmtDur formats a duration for people: 0.42ms, 12.3ms, 1.25s.
func fmtDur(d time.Duration) string {
	ms := float64(d) / 1e6
	switch {
	case d == 0:
		return "0"
	case ms < 10:
		return fmt.Sprintf("%.2fms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.1fms", ms)
	case ms < 60000:
		return fmt.Sprintf("%.2fs", ms/1000)
	default:
		return d.Round(time.Second).String()
	}
}
