package reports

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// Timeline geometry, in SVG user units (the SVG scales to the page).
const (
	tlWidth     = 1000.0
	tlGutter    = 120.0 // lane labels
	tlAxis      = 18.0  // the time axis on top
	tlRowH      = 7.0   // one row of calls
	tlMaxRows   = 10    // call rows before they wrap
	tlDenseOver = 120   // more calls than this: a histogram instead (a page of the full catalogue stays small)
	tlBins      = 60
	tlBandH     = 9.0
	tlGap       = 6.0
)

// svgRect is one rectangle of the timeline; Title is its tooltip.
type svgRect struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

// svgText is a label.
type svgText struct {
	X, Y   float64
	Class  string
	Anchor string
	Text   string
}

// svgLine is a rule or marker line.
type svgLine struct {
	X1, Y1, X2, Y2 float64
	Class          string
	Title          string
}

// timelineView is a scenario's timeline as SVG primitives.
type timelineView struct {
	W, H    float64
	Shades  []svgRect // fault windows across every lane
	Rects   []svgRect
	Lines   []svgLine
	Texts   []svgText
	Caption string
}

// buildTimeline lays out a scenario's timeline: the time axis, one lane
// for the client's calls and one per backend with its fault windows,
// health and breaker bands and session changes.
func buildTimeline(s *history.ScenarioResult, calls []seqCall, ws []window, evidence map[int]bool) *timelineView {
	end := s.Duration.D()
	for _, c := range calls {
		end = max(end, c.End.D())
	}
	for _, e := range s.Events {
		end = max(end, e.At.D())
	}
	if end <= 0 {
		end = time.Millisecond
	}
	plotW := tlWidth - tlGutter - 10
	x := func(d time.Duration) float64 { return tlGutter + plotW*float64(d)/float64(end) }
	tv := &timelineView{W: tlWidth}
	y := tlAxis

	// Axis ticks at a round step.
	step := niceStep(end, 8)
	for t := time.Duration(0); t <= end; t += step {
		tv.Lines = append(tv.Lines, svgLine{X1: x(t), Y1: tlAxis - 4, X2: x(t), Y2: tlAxis, Class: "tick"})
		tv.Texts = append(tv.Texts, svgText{X: x(t), Y: tlAxis - 6, Class: "tick", Anchor: "middle", Text: fmtDur(t)})
	}

	// The client lane.
	laneTop := y + 4
	tv.Texts = append(tv.Texts, svgText{X: 4, Y: laneTop + 9, Class: "lane", Text: "client calls"})
	if len(calls) > tlDenseOver {
		h := 56.0
		tv.Caption = fmt.Sprintf("%d calls, drawn as calls started per %s, stacked by outcome", len(calls), fmtDur(end/tlBins))
		tv.Rects = append(tv.Rects, density(calls, end, x, laneTop, h)...)
		for _, c := range calls {
			if evidence[c.seq] {
				// No tooltip: the checks table has the call.
				tv.Lines = append(tv.Lines, svgLine{X1: x(c.Start.D()), Y1: laneTop - 3, X2: x(c.Start.D()), Y2: laneTop + h, Class: "evidence"})
			}
		}
		y = laneTop + h
	} else {
		rows := packRows(calls)
		n := 0
		for i, c := range calls {
			r := rows[i]
			n = max(n, r+1)
			x0 := x(c.Start.D())
			w := math.Max(x(c.End.D())-x0, 1.2)
			cls := "call " + outcomeClass(c.CallRecord)
			if evidence[c.seq] {
				cls += " evidence"
			}
			tv.Rects = append(tv.Rects, svgRect{X: x0, Y: laneTop + float64(r)*(tlRowH+1), W: w, H: tlRowH, Class: cls, Title: callTitle(c.CallRecord)})
		}
		y = laneTop + math.Max(float64(n), 2)*(tlRowH+1)
		tv.Caption = fmt.Sprintf("%d calls, each drawn from its start for its duration", len(calls))
	}
	tv.Lines = append(tv.Lines, svgLine{X1: 0, Y1: y + tlGap/2, X2: tlWidth, Y2: y + tlGap/2, Class: "sep"})
	y += tlGap

	// A lane per backend.
	for _, b := range backendsOf(s, ws) {
		top := y
		tv.Texts = append(tv.Texts, svgText{X: 4, Y: top + 10, Class: "lane", Text: b})
		for _, w := range ws {
			if w.Backend != b {
				continue
			}
			x0, x1 := x(w.Start), x(w.End)
			cls := "fault"
			if w.Point {
				cls = "fault point"
			}
			title := w.Label() + fmt.Sprintf(" at %s for %s", fmtDur(w.Start), fmtDur(w.End-w.Start))
			if w.Closer == "" {
				title += " (still active at the end)"
			}
			tv.Rects = append(tv.Rects, svgRect{X: x0, Y: top, W: math.Max(x1-x0, 2), H: 12, Class: cls, Title: title})
			if !w.Point {
				tv.Shades = append(tv.Shades, svgRect{X: x0, Y: tlAxis, W: math.Max(x1-x0, 1), Class: "shade", Title: title})
			}
			if x1-x0 > 60 {
				tv.Texts = append(tv.Texts, svgText{X: x0 + 2, Y: top + 9, Class: "flabel", Text: clip(w.Action+" "+w.Detail, int((x1-x0)/5))})
			}
		}
		y = top + 14
		for _, aspect := range []string{"health", "breaker", "session"} {
			segs := stateSegments(s.Events, b, aspect, end)
			if len(segs) == 0 {
				continue
			}
			tv.Texts = append(tv.Texts, svgText{X: 14, Y: y + 7, Class: "band", Text: aspect})
			for _, sg := range segs {
				x0 := x(sg.from)
				tv.Rects = append(tv.Rects, svgRect{X: x0, Y: y, W: math.Max(x(sg.to)-x0, 1), H: tlBandH - 2,
					Class: "state " + stateClass(sg.state), Title: fmt.Sprintf("%s %s %s from %s", b, aspect, sg.state, fmtDur(sg.from))})
				if aspect == "session" {
					tv.Lines = append(tv.Lines, svgLine{X1: x0, Y1: y - 1, X2: x0, Y2: y + tlBandH - 1, Class: "change",
						Title: fmt.Sprintf("%s session %s at %s", b, sg.state, fmtDur(sg.from))})
				}
			}
			y += tlBandH
		}
		tv.Lines = append(tv.Lines, svgLine{X1: 0, Y1: y + tlGap/2, X2: tlWidth, Y2: y + tlGap/2, Class: "sep"})
		y += tlGap
	}
	tv.H = y + 2
	for i := range tv.Shades {
		tv.Shades[i].H = y - tlAxis
	}
	return tv
}

// seqCall is a call with its event's Seq.
type seqCall struct {
	*history.CallRecord
	seq int
}

func callTitle(c *history.CallRecord) string {
	s := fmt.Sprintf("%s %s: %s (%s) at %s, took %s", c.Client, callName(c), outcomeText[outcomeClass(c)], c.Outcome, fmtDur(c.Start.D()), fmtDur(c.Duration.D()))
	if c.Backend != "" {
		s += ", backend " + c.Backend
	}
	return s
}

// packRows assigns each call (sorted by start) the first row free at its
// start; past tlMaxRows rows they wrap around.
func packRows(calls []seqCall) []int {
	rows := make([]int, len(calls))
	var free []time.Duration
	for i, c := range calls {
		r := slices.IndexFunc(free, func(f time.Duration) bool { return f <= c.Start.D() })
		if r < 0 {
			if len(free) < tlMaxRows {
				free = append(free, 0)
				r = len(free) - 1
			} else {
				r = i % tlMaxRows
			}
		}
		free[r] = c.End.D()
		rows[i] = r
	}
	return rows
}

// density draws calls as a histogram of the calls started per bin,
// stacked by outcome, scaled to the fullest bin.
func density(calls []seqCall, end time.Duration, x func(time.Duration) float64, top, h float64) []svgRect {
	classes := []string{"ok", "named", "unnamed", "timeout", "dropped"}
	bins := make([][5]int, tlBins)
	peak := 0
	for _, c := range calls {
		b := min(int(float64(c.Start.D())/float64(end)*tlBins), tlBins-1)
		bins[b][slices.Index(classes, outcomeClass(c.CallRecord))]++
		peak = max(peak, bins[b][0]+bins[b][1]+bins[b][2]+bins[b][3]+bins[b][4])
	}
	var out []svgRect
	binW := end / tlBins
	for i, b := range bins {
		base := top + h
		for k, n := range b {
			if n == 0 {
				continue
			}
			bh := h * float64(n) / float64(peak)
			base -= bh
			from := binW * time.Duration(i)
			out = append(out, svgRect{X: x(from), Y: base, W: math.Max(x(from+binW)-x(from)-0.3, 0.8), H: bh, Class: "call " + classes[k],
				Title: fmt.Sprintf("%d calls %s, started %s – %s", n, outcomeText[classes[k]], fmtDur(from), fmtDur(from+binW))})
		}
	}
	return out
}

// segment is a state held from..to.
type segment struct {
	from, to time.Duration
	state    string
}

// stateSegments turns a backend's transitions of one aspect into bands.
func stateSegments(events []history.Event, backend, aspect string, end time.Duration) []segment {
	var segs []segment
	for _, e := range events {
		t := e.Transition
		if e.Kind != history.EventTransition || t == nil || t.Backend != backend || t.Aspect != aspect {
			continue
		}
		if n := len(segs); n > 0 {
			segs[n-1].to = e.At.D()
		}
		segs = append(segs, segment{from: e.At.D(), to: end, state: t.To})
	}
	return segs
}

// stateClass maps a health, breaker or session state to a colour class.
func stateClass(s string) string {
	switch s {
	case "healthy", "closed", "connected", "ready", "active":
		return "st-good"
	case "degraded", "half-open", "half_open", "halfopen", "reconnecting", "probing":
		return "st-mid"
	case "unhealthy", "open", "error", "failed", "disconnected", "expired", "down":
		return "st-bad"
	default:
		return "st-unknown"
	}
}

// backendsOf lists the backends a scenario touched: faults, transitions
// and the backends calls named.
func backendsOf(s *history.ScenarioResult, ws []window) []string {
	seen := map[string]bool{}
	for _, w := range ws {
		seen[w.Backend] = true
	}
	for _, e := range s.Events {
		switch {
		case e.Transition != nil:
			seen[e.Transition.Backend] = true
		case e.Call != nil && e.Call.Backend != "":
			seen[e.Call.Backend] = true
		}
	}
	delete(seen, "")
	return slices.Sorted(maps.Keys(seen))
}

// niceStep picks a 1-2-5 step giving at most n ticks over d.
func niceStep(d time.Duration, n int) time.Duration {
	raw := float64(d) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return time.Duration(math.Max(m*mag, 1))
		}
	}
	return time.Duration(10 * mag)
}

func clip(s string, n int) string {
	r, n := []rune(s), max(n, 4)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
