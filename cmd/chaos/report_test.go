package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/reports"
)

// checkReportFile checks a written report: self-contained (no external
// reference), within 2 MB, a section per scenario named.
func checkReportFile(t *testing.T, path string, scenarios ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	if len(b) > 2<<20 {
		t.Errorf("report %s: %d bytes, over 2 MB", path, len(b))
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
	if out, err := exec.CommandContext(ctx, chaosBin, "report", a, b, "--out", two).CombinedOutput(); err != nil {
		t.Fatalf("chaos report: %v\n%s", err, out)
	}
	checkReportFile(t, two, "hang/modern/streamable-http")
	page, _ := os.ReadFile(two)
	if !bytes.Contains(page, []byte(`id="compare"`)) || !bytes.Contains(page, []byte("run-reference.json")) || !bytes.Contains(page, []byte(`class="differs"`)) {
		t.Error("scorecard: no side-by-side section with both files and the differences marked")
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
}
