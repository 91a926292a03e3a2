package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
)

// TestRunParallel: with --parallel, scenarios run several at a time (each
// its own topology); every one passes, the results keep the catalogue's
// order, and every scenario gets one progress line. A --parallel out of
// range is a usage error.
func TestRunParallel(t *testing.T) {
	t.Parallel() // owns its processes, directories and ports (see TestMain)
	out := filepath.Join(t.TempDir(), "results.json")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	labels := []string{"wrapping/legacy/streamable-http", "restart", "session/legacy/sse"}
	cmd := exec.CommandContext(ctx, chaosBin, "run", "--parallel", "3", "--label", labels[0], "--label", labels[1], "--label", labels[2], "--out", out, "--no-html")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if err != nil {
		t.Fatalf("chaos run --parallel 3: %v", err)
	}
	selected, err := scenarios.Select(scenarios.Catalogue(), labels...)
	if err != nil {
		t.Fatal(err)
	}
	res := readResults(t, out)
	if len(res.Scenarios) != len(selected) {
		t.Fatalf("%d results for %d scenarios", len(res.Scenarios), len(selected))
	}
	for i, s := range res.Scenarios {
		if s.Name != selected[i].Name {
			t.Errorf("result %d is %s, want %s (the catalogue's order)", i, s.Name, selected[i].Name)
		}
		if s.Verdict != history.VerdictPassed {
			t.Errorf("%s: %s %s", s.Name, s.Verdict, s.Reason)
		}
	}
	if n := strings.Count(stdout.String(), "] PASSED"); n != len(selected) {
		t.Errorf("%d progress lines for %d scenarios", n, len(selected))
	}

	for _, bad := range []string{"0", "17"} {
		c := exec.CommandContext(ctx, chaosBin, "run", "--parallel", bad, "--label", "wrapping", "--no-html", "--out", out)
		b, err := c.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
			t.Errorf("--parallel %s: %v, want exit 2: %s", bad, err, b)
		}
	}
}
