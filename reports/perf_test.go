package reports

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// fullCatalogue builds a results document the size of a full run of the
// catalogue: the real scenarios of testdata/run-reference.json repeated
// to 30, plus two load scenarios of 4,500 calls each (a full run's JSON is
// ~6 MB, nearly all of it the load scenarios' calls).
func fullCatalogue(t testing.TB) []Input {
	in, err := Load("testdata/run-reference.json")
	if err != nil {
		t.Fatal(err)
	}
	base := in[0].Results
	r := *base
	r.Scenarios = nil
	for i := 0; len(r.Scenarios) < 30; i++ {
		s := base.Scenarios[i%len(base.Scenarios)]
		s.Name = fmt.Sprintf("%s-%d", s.Name, i)
		r.Scenarios = append(r.Scenarios, s)
	}
	for _, name := range []string{"load/legacy/streamable-http", "load/modern/sse"} {
		r.Scenarios = append(r.Scenarios, loadScenario(name, 4500))
	}
	return []Input{{Name: "full.json", Results: &r}}
}

// loadScenario is a load scenario: 16 clients calling for 2.2s while beta
// crashes four times for 300ms.
func loadScenario(name string, n int) history.ScenarioResult {
	s := history.ScenarioResult{Name: name, Verdict: history.VerdictPassed, Duration: history.Millis(2200 * time.Millisecond)}
	seq := 0
	ev := func(e history.Event) { seq++; e.Seq = seq; s.Events = append(s.Events, e) }
	step := 2200 * time.Millisecond / time.Duration(n)
	for w := range 4 {
		at := time.Duration(100+500*w) * time.Millisecond
		ev(history.Event{Kind: history.EventFault, At: history.Millis(at), Fault: &history.FaultRecord{Backend: "beta", Action: "set", Kinds: []string{"crash"}, Detail: "crash reset"}})
		ev(history.Event{Kind: history.EventFault, At: history.Millis(at + 300*time.Millisecond), Fault: &history.FaultRecord{Backend: "beta", Action: "clear"}})
	}
	for i := range n {
		start := step * time.Duration(i)
		d := time.Duration(1+i%50) * time.Millisecond
		c := &history.CallRecord{Client: fmt.Sprintf("c%d", i%16), Method: "tools/call", Target: "beta_echo", Outcome: history.OutcomeOK,
			Start: history.Millis(start), End: history.Millis(start + d), Duration: history.Millis(d)}
		if (start/(100*time.Millisecond))%5 == 1 && i%4 != 0 {
			c.Outcome, c.Backend, c.Error = history.OutcomeBackendUnavailable, "beta", `backend "beta" unavailable: connection reset`
		}
		ev(history.Event{Kind: history.EventCall, At: c.Start, Call: c})
	}
	return s
}

// TestRenderFullRun: a full run's report renders well under a second and
// stays under 1 MB (bounds_test.go holds the bound on the synthetic full
// catalogue, passing and failing). The time is logged (~0.2s here under load; the real full run in the commit message: ~50ms render, 0.4 MB);
// the assert is a generous bound for a loaded machine.
func TestRenderFullRun(t *testing.T) {
	in := fullCatalogue(t)
	var buf bytes.Buffer
	start := time.Now()
	if err := Render(&buf, in, Options{}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("full catalogue (%d scenarios): rendered in %s, %d bytes", len(in[0].Results.Scenarios), took, buf.Len())
	if buf.Len() > 1<<20 {
		t.Errorf("report of a full run: %d bytes, over 1 MB", buf.Len())
	}
	bound := 10 * time.Second
	if raceEnabled {
		bound = time.Minute
	}
	if took > bound {
		t.Errorf("report of a full run took %s", took)
	}
	p := checkStructure(t, buf.Bytes(), in)
	load := p.ids["r0-s31"]
	if cap := find(load, "figcaption", ""); len(cap) != 1 || !strings.Contains(text(cap[0]), "4500 calls, drawn as calls started per") {
		t.Error("the load scenario's 4500 calls are not drawn as a histogram")
	}
	if n := len(find(load, "rect", "call")); n > 4*tlBins {
		t.Errorf("load timeline: %d call rects for %d bins", n, tlBins)
	}
}

func BenchmarkRenderFullRun(b *testing.B) {
	in := fullCatalogue(b)
	for b.Loop() {
		var buf bytes.Buffer
		if err := Render(&buf, in, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
