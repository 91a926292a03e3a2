package reports

import (
	"bytes"
	"cmp"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

var update = flag.Bool("update", false, "rewrite the golden HTML files in testdata/")

func load(t *testing.T, names ...string) []Input {
	t.Helper()
	var paths []string
	for _, n := range names {
		paths = append(paths, filepath.Join("testdata", n))
	}
	in, err := Load(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func render(t *testing.T, in []Input) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, in, Options{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// parsedPage is a parsed report with lookups by id and class.
type parsedPage struct {
	root *html.Node
	ids  map[string]*html.Node
}

func parse(t *testing.T, b []byte) *parsedPage {
	t.Helper()
	root, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	p := &parsedPage{root: root, ids: map[string]*html.Node{}}
	p.each(func(n *html.Node) {
		if id := attr(n, "id"); id != "" {
			if p.ids[id] != nil {
				t.Errorf("duplicate id %q", id)
			}
			p.ids[id] = n
		}
	})
	return p
}

func (p *parsedPage) each(fn func(*html.Node)) { walk(p.root, fn) }

func walk(n *html.Node, fn func(*html.Node)) {
	if n.Type == html.ElementNode {
		fn(n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	for _, c := range strings.Fields(attr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}

// find lists the elements named tag (any, if "") having class (any, if "").
func find(root *html.Node, tag, class string) []*html.Node {
	var out []*html.Node
	walk(root, func(n *html.Node) {
		if (tag == "" || n.Data == tag) && (class == "" || hasClass(n, class)) {
			out = append(out, n)
		}
	})
	return out
}

func text(n *html.Node) string {
	var b strings.Builder
	var rec func(*html.Node)
	rec = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			rec(c)
		}
	}
	rec(n)
	return b.String()
}

// checkStructure checks what every report must have: nothing external,
// every in-page link resolving, a section per scenario with its heading
// and badge, a scorecard cell linking to each, and a timeline for each
// scenario that recorded events.
func checkStructure(t *testing.T, b []byte, in []Input) *parsedPage {
	t.Helper()
	refs, err := ExternalRefs(bytes.NewReader(b))
	if err != nil || len(refs) > 0 {
		t.Fatalf("external references: %v %v", refs, err)
	}
	p := parse(t, b)
	p.each(func(n *html.Node) {
		if h := attr(n, "href"); strings.HasPrefix(h, "#") && p.ids[h[1:]] == nil {
			t.Errorf("link to missing #%s", h[1:])
		}
	})
	if len(find(p.root, "style", "")) != 1 || len(find(p.root, "title", "")) < 1 {
		t.Error("no inline style sheet or no title")
	}
	scorecard := len(in) > 1 && p.ids["compare"] != nil
	for i, x := range in {
		run := p.ids[runID(i)]
		if run == nil {
			t.Fatalf("no section for run %d", i)
		}
		grid := find(run, "table", "grid")
		if len(grid) != 1 {
			t.Fatalf("run %d: %d scorecard grids", i, len(grid))
		}
		linked := map[string]bool{}
		for _, a := range find(grid[0], "a", "badge") {
			linked[strings.TrimPrefix(attr(a, "href"), "#")] = true
		}
		secs := find(run, "section", "scenario")
		if len(secs) != len(x.Results.Scenarios) {
			t.Fatalf("run %d: %d scenario sections for %d scenarios", i, len(secs), len(x.Results.Scenarios))
		}
		for j, s := range x.Results.Scenarios {
			sec := secs[j]
			if !linked[attr(sec, "id")] {
				t.Errorf("%s: no scorecard cell links to it", s.Name)
			}
			h := find(sec, "h3", "")
			if len(h) == 0 || !strings.Contains(text(h[0]), s.Name) || !strings.Contains(text(h[0]), Badge(&s)) {
				t.Errorf("%s: heading %q lacks the name or the badge %q", s.Name, text(h[0]), Badge(&s))
			}
			if !hasClass(sec, "v-"+string(s.Verdict)) {
				t.Errorf("%s: section class %q lacks the verdict", s.Name, attr(sec, "class"))
			}
			svgs := find(sec, "svg", "")
			if len(in) > 1 && len(find(sec, "p", "brief")) == 1 {
				// A scorecard leaves out a passed scenario's details.
				if s.Verdict != history.VerdictPassed || len(svgs) > 0 {
					t.Errorf("%s: %s, shown briefly with %d timelines", s.Name, s.Verdict, len(svgs))
				}
				continue
			}
			if scorecard {
				// The others it sums up: the properties of the checks
				// that did not pass, the rest in the run's own report.
				if len(svgs) > 0 || len(find(sec, "p", "compact")) != 1 {
					t.Errorf("%s: in a scorecard with %d timelines and no pointer to the run's report", s.Name, len(svgs))
				}
				if i := slices.IndexFunc(s.Checks, func(c history.Check) bool { return c.Verdict != history.CheckPassed }); i >= 0 {
					c := s.Checks[i]
					if p := cmp.Or(c.Property, history.PropertyOf(c.Name), history.PropOther); !strings.Contains(text(sec), p.Text()) {
						t.Errorf("%s: the scorecard does not name the property %q of check %q", s.Name, p.Text(), c.Name)
					}
				}
				continue
			}
			if (len(s.Events) > 0) != (len(svgs) == 1) {
				t.Errorf("%s: %d events, %d timelines", s.Name, len(s.Events), len(svgs))
			}
			first := slices.IndexFunc(s.Checks, func(c history.Check) bool { return len(in) == 1 || c.Verdict != history.CheckPassed })
			if first >= 0 && len(find(sec, "tr", "cv-"+string(s.Checks[first].Verdict))) == 0 {
				t.Errorf("%s: no row for check %q", s.Name, s.Checks[first].Name)
			}
		}
	}
	return p
}

func runID(i int) string { return "r" + string(rune('0'+i)) }

// TestRenderRealRun renders a real `chaos run` (a subset of the catalogue
// against the reference gateway) and checks its structure and content:
// fault windows with recovery, health and breaker bands, session changes.
func TestRenderRealRun(t *testing.T) {
	in := load(t, "run-reference.json")
	b := render(t, in)
	p := checkStructure(t, b, in)
	breaker := p.ids["r0-s5"]
	if breaker == nil || !strings.Contains(text(breaker), "breaker/legacy/streamable-http") {
		t.Fatal("no breaker section")
	}
	body := text(breaker)
	for _, want := range []string{"beta: set http_status 500", "after clear", "backend \"beta\" unavailable: circuit open", "1 fault window(s) on beta; slowest recovery 1.0"} {
		if !strings.Contains(body, want) {
			t.Errorf("breaker section lacks %q", want)
		}
	}
	svg := find(breaker, "svg", "")[0]
	if n := len(find(svg, "rect", "st-bad")); n < 2 {
		t.Errorf("breaker timeline: %d bad-state bands (want beta unhealthy and open)", n)
	}
	if n := len(find(svg, "rect", "shade")); n != 1 {
		t.Errorf("breaker timeline: %d shaded fault windows, want 1", n)
	}
	if n := len(find(svg, "rect", "call")); n != 16 {
		t.Errorf("breaker timeline: %d calls, want 16", n)
	}
	session := p.ids["r0-s3"]
	if n := len(find(session, "line", "change")); n < 8 {
		t.Errorf("session timeline: %d session changes drawn", n)
	}
}

// TestRenderEveryOutcome renders the hand-made fixture holding every
// outcome (passed, failed, skipped, partial with a not_applicable check,
// partial and failed without per-check results, interrupted, timeouts,
// errors not naming the backend, secrets in error texts) and compares it
// with the golden page.
func TestRenderEveryOutcome(t *testing.T) {
	in := load(t, "outcomes.json")
	b := render(t, in)
	p := checkStructure(t, b, in)
	all := text(p.root)
	for _, secret := range []string{"sk-live-abcdef123456", "hunter2", "tok-SECRET-1", "AKIA-SECRET-XYZ", "abcdefghijklmnop"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("secret %q in the report", secret)
		}
	}
	for _, want := range []string{
		"This run was interrupted", "[redacted]",
		"PASSED 3/3", "FAILED 2/4", "PASSED* 1/2", "PASSED*", "SKIPPED",
		"target fixture-gateway lacks capability metrics", // not_applicable reason and skipped check
		"#99999 (not in the timeline)",                    // evidence missing from the timeline
		"active at the end", "kill failed: alpha is not a process backend",
		"not run: the run was interrupted", "interrupted while running",
		"failed_calls_after_restart: 1 calls failed",
		"5 passed (2 partial: some checks did not apply), 3 failed, 1 inconclusive, 2 skipped", "6 passed, 2 failed, 1 inconclusive (not judged: see each), 2 not applicable",
		"INCONCLUSIVE 1/2", "? inconclusive", "no call reached beta with the fault applied", "modern→2025-06-18",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	hang := p.ids["r0-s1"]
	svg := find(hang, "svg", "")[0]
	for _, cls := range []string{"timeout", "unnamed", "named", "ok", "evidence"} {
		if len(find(svg, "rect", cls)) == 0 {
			t.Errorf("hang timeline: no %s call", cls)
		}
	}
	if len(find(hang, "div", "o-timeout")) != 1 {
		t.Error("hang: the timeout call is not shown as evidence")
	}
	golden := filepath.Join("testdata", "outcomes.golden.html")
	if *update {
		if err := os.WriteFile(golden, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./reports -run TestRenderEveryOutcome -update writes it)", err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("the report differs from %s; if intended, rerun with -update and review the diff", golden)
	}
}

// TestScorecardOfGateways puts two gateways side by side: the scenarios
// where their verdicts or failed checks differ are marked, with a per-check
// comparison; the same run twice differs nowhere.
func TestScorecardOfGateways(t *testing.T) {
	in := load(t, "run-reference.json", "outcomes.json")
	b := render(t, in)
	p := checkStructure(t, b, in)
	cmp := p.ids["compare"]
	if cmp == nil {
		t.Fatal("no side-by-side section")
	}
	head := find(cmp, "thead", "")[0]
	if !strings.Contains(text(head), "run-reference.json") || !strings.Contains(text(head), "outcomes.json") {
		t.Errorf("columns: %q", text(head))
	}
	differs := map[string]bool{}
	for _, tr := range find(cmp, "tr", "differs") {
		if th := find(tr, "th", ""); len(th) > 0 {
			differs[strings.TrimSpace(strings.TrimPrefix(text(th[0]), "≠"))] = true
		}
	}
	for _, name := range []string{"hang/modern/streamable-http", "restart/legacy/sse", "session/legacy/sse", "wrapping/legacy/sse", "stall bounded by the call timeout"} {
		if !differs[name] {
			t.Errorf("%s not marked as differing (marked: %v)", name, differs)
		}
	}
	for _, same := range []string{"hang-pause/modern/sse", "breaker/legacy/streamable-http"} {
		if differs[same] {
			t.Errorf("%s passed in both (once with per-check results) but is marked as differing", same)
		}
	}
	copied := filepath.Join(t.TempDir(), "run-reference.json")
	if b, err := os.ReadFile(filepath.Join("testdata", "run-reference.json")); err != nil || os.WriteFile(copied, b, 0o644) != nil {
		t.Fatal("copy the fixture")
	}
	twice, err := Load(filepath.Join("testdata", "run-reference.json"), copied)
	if err != nil {
		t.Fatal(err)
	}
	if twice[0].Name == twice[1].Name {
		t.Errorf("two files of the same name get the same column label %q", twice[0].Name)
	}
	same := render(t, twice)
	if sp := parse(t, same); len(find(sp.ids["compare"], "tr", "differs")) != 0 {
		t.Error("the same run twice is marked as differing")
	}
}

// TestLoadBadInput: a file that is not a results document is an error
// naming it; Render refuses no input.
func TestLoadBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	old := filepath.Join(dir, "old.json")
	os.WriteFile(bad, []byte(`{"schemaVersion": 1, "scenarios": [`), 0o644)
	os.WriteFile(old, []byte(`{"schemaVersion": 0, "scenarios": []}`), 0o644)
	for _, f := range []string{bad, old, filepath.Join(dir, "missing.json")} {
		if _, err := Load(f); err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("Load(%s): %v, want an error naming the file", f, err)
		}
	}
	if err := Render(&bytes.Buffer{}, nil, Options{}); err == nil {
		t.Error("Render with no input: no error")
	}
	if err := Render(&bytes.Buffer{}, []Input{{Name: "x"}}, Options{}); err == nil {
		t.Error("Render with nil results: no error")
	}
	// An empty run renders.
	checkStructure(t, render(t, []Input{{Results: harness.NewResults(nil)}}), []Input{{Results: harness.NewResults(nil)}})
}

// TestExternalRefs: the checker finds every way a page could fetch.
func TestExternalRefs(t *testing.T) {
	for _, doc := range []string{
		`<img src="http://x/y.png">`, `<link rel="stylesheet" href="a.css">`, `<script src="https://cdn/x.js"></script>`,
		`<style>@import "x.css";</style>`, `<style>body{background:url(http://x/y)}</style>`, `<p style="background:url('//x')">`,
		`<a href="https://example.com">x</a>`, `<svg><use xlink:href="https://x/s.svg#a"/></svg>`, `<iframe></iframe>`,
		`<script>fetch("x")</script>`, `<body onload="x()">`,
	} {
		refs, err := ExternalRefs(strings.NewReader(doc))
		if err != nil || len(refs) == 0 {
			t.Errorf("%s: not detected (%v)", doc, err)
		}
	}
	refs, _ := ExternalRefs(strings.NewReader(`<a href="#x">x</a><p id="x" style="color:red"></p><svg><rect fill="url(#p)"/></svg>`))
	if len(refs) != 0 {
		t.Errorf("in-page references flagged: %v", refs)
	}
}

// TestScorecardReferenceAndFixtures: the scorecard of the reference
// against the two fixture gateways of the target-profile issue (real
// results, cut to five scenarios each) marks where they differ: fixture a
// has no session API (session skipped) and no keepalive declared in that
// run (skipped), and its load scenario failed under load; all three pass
// wrapping and breaker alike. Each run's summary names its profile.
func TestScorecardReferenceAndFixtures(t *testing.T) {
	in := load(t, "scorecard-ref.json", "scorecard-fixture-a.json", "scorecard-fixture-b.json")
	b := render(t, in)
	p := checkStructure(t, b, in)
	cmp := p.ids["compare"]
	if cmp == nil {
		t.Fatal("no side-by-side section")
	}
	head := text(find(cmp, "thead", "")[0])
	for _, col := range []string{"scorecard-ref.json", "scorecard-fixture-a.json", "scorecard-fixture-b.json"} {
		if !strings.Contains(head, col) {
			t.Errorf("no column %s: %q", col, head)
		}
	}
	differs := map[string]bool{}
	for _, tr := range find(cmp, "tr", "differs") {
		if th := find(tr, "th", ""); len(th) > 0 {
			differs[strings.TrimSpace(strings.TrimPrefix(text(th[0]), "≠"))] = true
		}
	}
	for _, name := range []string{"session/legacy/streamable-http", "keepalive/legacy/sse", "load/legacy/streamable-http",
		"alpha never fails while beta crashes"} {
		if !differs[name] {
			t.Errorf("%s not marked as differing (marked: %v)", name, differs)
		}
	}
	for _, same := range []string{"wrapping/legacy/sse", "breaker/modern/sse"} {
		if differs[same] {
			t.Errorf("%s passed alike everywhere but is marked as differing", same)
		}
	}
	page := text(p.root)
	for _, w := range []string{"fixture-a", "fixture-b", "scenarios/testdata/profiles/fixture-a.yaml", "none (built-in target)"} {
		if !strings.Contains(page, w) {
			t.Errorf("the report does not show %q", w)
		}
	}
}

// TestReportCSPAndInterrupted: every report carries the strict CSP meta
// first in its head (a second line of defence behind the escaping), and a
// scenario a signal cut short is shown and counted as interrupted.
func TestReportCSPAndInterrupted(t *testing.T) {
	r := harness.NewResults(nil)
	r.Interrupted = true
	rec := history.NewRecorder("wrapping/legacy/sse")
	rec.SetVerdict(history.VerdictInterrupted, "interrupted (interrupt signal received) after 442ms")
	r.Add(rec)
	b := string(render(t, []Input{{Results: r}}))
	const csp = `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`
	if i := strings.Index(b, csp); i < 0 || i > strings.Index(b, "<title>") {
		t.Errorf("no CSP meta before the title")
	}
	for _, want := range []string{"1 interrupted", "b-interrupted", "INTERRUPTED", "after 442ms"} {
		if !strings.Contains(b, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(b, "overran") {
		t.Error("an interrupted scenario reported as overrunning")
	}
}
