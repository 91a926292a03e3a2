package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/reports"
)

// checkReportFile checks a written report: self-contained (no external
// reference), within 1 MB, a section per scenario named.
func checkReportFile(t *testing.T, path string, scenarios ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	if len(b) > 1<<20 {
		t.Errorf("report %s: %d bytes, over 1 MB", path, len(b))
	}
	refs, err := reports.ExternalRefs(bytes.NewReader(b))
	if err != nil || len(refs) > 0 {
		t.Errorf("report %s: external references %v (%v)", path, refs, err)
	}
	for _, s := range scenarios {
		if !bytes.Contains(b, []byte(`</span> `+s+`</h3>`)) {
			t.Errorf("report %s: no section for %s", path, s)
		}
	}
}

// TestReportCommand: `chaos report` renders one file, and several side by
// side (a column per file); --no-html writes none.
func TestReportCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	a := filepath.Join("..", "..", "reports", "testdata", "run-reference.json")
	b := filepath.Join("..", "..", "reports", "testdata", "outcomes.json")
	one := filepath.Join(dir, "one", "report.html")
	if out, err := exec.CommandContext(ctx, chaosBin, "report", a, "-o", one).CombinedOutput(); err != nil {
		t.Fatalf("chaos report: %v\n%s", err, out)
	}
	checkReportFile(t, one, "breaker/legacy/streamable-http", "session/legacy/sse")
	two := filepath.Join(dir, "scorecard.html")
	// outcomes.json holds failed scenarios: the page is written, exit 1.
	if out, err := exec.CommandContext(ctx, chaosBin, "report", a, b, "--out", two).CombinedOutput(); exitOf(err) != 1 || !strings.Contains(string(out), "failed scenario(s) in the input") {
		t.Fatalf("chaos report of a failed run: %v, want exit 1\n%s", err, out)
	}
	checkReportFile(t, two, "hang/modern/streamable-http")
	page, _ := os.ReadFile(two)
	if !bytes.Contains(page, []byte(`id="compare"`)) || !bytes.Contains(page, []byte("run-reference.json")) || !bytes.Contains(page, []byte(`class="differs"`)) {
		t.Error("scorecard: no side-by-side section with both files and the differences marked")
	}
	// --full: every check in its row, none counted instead.
	bounded, full := filepath.Join(dir, "bounded.html"), filepath.Join(dir, "full.html")
	exec.CommandContext(ctx, chaosBin, "report", b, "-o", bounded).Run()
	exec.CommandContext(ctx, chaosBin, "report", b, "--full", "-o", full).Run()
	bp, _ := os.ReadFile(bounded)
	fp, _ := os.ReadFile(full)
	if !bytes.Contains(bp, []byte(`<tr class="more cv-passed">`)) || bytes.Contains(fp, []byte(`<tr class="more cv-`)) || !bytes.Contains(fp, []byte("breaker closes after recovery")) {
		t.Error("--full does not show every check, or the bounded page counts none")
	}

	// A file that is not results: exit status 2, naming it.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{nope"), 0o644)
	out, err := exec.CommandContext(ctx, chaosBin, "report", bad, "-o", filepath.Join(dir, "x.html")).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), bad) {
		t.Errorf("bad input: %v, %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.html")); err == nil {
		t.Error("a report was written for bad input")
	}
	// Strict: trailing data after the JSON is exit 2, naming the file and
	// the byte offset.
	good, _ := os.ReadFile(a)
	trail := filepath.Join(dir, "trail.json")
	os.WriteFile(trail, append(good, []byte("{}")...), 0o644)
	out, err = exec.CommandContext(ctx, chaosBin, "report", trail, "-o", filepath.Join(dir, "y.html")).CombinedOutput()
	if exitOf(err) != 2 || !strings.Contains(string(out), fmt.Sprintf("%s: byte %d: trailing data", trail, len(good))) {
		t.Errorf("trailing data: %v, %s", err, out)
	}
}

// exitOf is a command's exit status (0 when err is nil, -1 when it did
// not exit).
func exitOf(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}

// TestReportOfJournals: `chaos report` exits 1 when a journal holds a
// deviated, aborted or interrupted experiment (0 when all held), and
// journals of different experiments are listed, one section each, not
// columns of one comparison.
func TestReportOfJournals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	write := func(name, title, reason string, interrupted bool) string {
		rec := history.NewRecorder(title, "experiment")
		if reason == "" {
			rec.Pass()
		} else {
			rec.Fail(reason)
		}
		res := harness.NewResults(nil)
		res.Target, res.Interrupted = "http://127.0.0.1:4483/mcp", interrupted
		res.Scenarios = append(res.Scenarios, rec.Result())
		p := filepath.Join(dir, name)
		if err := res.WriteFile(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	held := write("held.json", "an error on beta_echo names beta", "", false)
	held2 := write("held2.json", "the breaker on beta opens and recovers", "", false)
	out := filepath.Join(dir, "r.html")
	if msg, err := exec.CommandContext(ctx, chaosBin, "report", held, held2, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("held journals: %v\n%s", err, msg)
	}
	page, _ := os.ReadFile(out)
	if !bytes.Contains(page, []byte(`id="experiments"`)) || bytes.Contains(page, []byte(`id="compare"`)) || bytes.Contains(page, []byte("not run")) {
		t.Error("journals of different experiments are not a list of experiments")
	}
	for _, c := range []struct{ name, reason string }{
		{"deviated.json", "deviated: method[1]: the stalled call is answered in bounded time deviated"},
		{"aborted.json", "aborted: before any fault: control beta: connection refused"},
		{"interrupted.json", "interrupted: interrupted (signal): rolled back"},
	} {
		bad := write(c.name, "a stall on beta does not hang", c.reason, c.name == "interrupted.json")
		msg, err := exec.CommandContext(ctx, chaosBin, "report", held, bad, "-o", out).CombinedOutput()
		if exitOf(err) != 1 || !strings.Contains(string(msg), c.reason) {
			t.Errorf("%s: %v, want exit 1 naming the reason\n%s", c.name, err, msg)
		}
		if fi, err := os.Stat(out); err != nil || fi.Size() == 0 {
			t.Errorf("%s: no page written", c.name)
		}
	}
}
