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

	"github.com/vmcp-chaos/vmcp-chaos/harness"
)

// TestRunWrappingEndToEnd runs `chaos run --label wrapping` as a process
// (reference gateway, in-process fake backends) and checks the verdict
// table, the exit status and the JSON results.
func TestRunWrappingEndToEnd(t *testing.T) {
	out := filepath.Join(t.TempDir(), "res", "results.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chaosBin, "run", "--label", "wrapping", "--out", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if err != nil {
		t.Fatalf("chaos run: %v", err)
	}
	table := stdout.String()
	for _, want := range []string{"SCENARIO", "VERDICT", "KEY FIGURES", "wrapping/legacy/streamable-http", "wrapping/modern/sse", "time to error max", "4 passed, 0 failed, 0 skipped"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	if strings.Contains(table, "hang/") || strings.Contains(table, "FAILED") {
		t.Errorf("table has other scenarios or failures")
	}

	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := harness.ReadResults(f)
	if err != nil {
		t.Fatal(err)
	}
	if res.Target != "reference" || len(res.Scenarios) != 4 || res.Failed() {
		t.Fatalf("results: target %q, %d scenarios, failed %v", res.Target, len(res.Scenarios), res.Failed())
	}
	for _, s := range res.Scenarios {
		if s.Verdict != harness.VerdictPassed || !strings.HasPrefix(s.Name, "wrapping/") {
			t.Errorf("%s: %s %s", s.Name, s.Verdict, s.Reason)
		}
		if s.Figures["time_to_error_ms.tools_call.403"] <= 0 {
			t.Errorf("%s: no time to error for 403: %v", s.Name, s.Figures)
		}
		var calls, faults int
		for _, e := range s.Events {
			switch e.Kind {
			case harness.EventCall:
				calls++
			case harness.EventFault:
				faults++
			}
		}
		if calls < 30 || faults < 10 {
			t.Errorf("%s: timeline has %d calls, %d faults", s.Name, calls, faults)
		}
	}
}

// TestRunFlags: bad flags fail before anything starts; --list lists.
func TestRunFlags(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--target", "nope"}, `unknown --target "nope"`},
		{[]string{"run", "--label", "nolabel"}, "no scenario has label nolabel"},
		{[]string{"run", "--capabilities", "telepathy"}, "telepathy"},
		{[]string{"run", "--gateway-cmd", "x"}, "need --target exec"},
	} {
		out, err := exec.CommandContext(ctx, chaosBin, tc.args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: err %v, output %s", tc.args, err, out)
		}
	}
	out, err := exec.CommandContext(ctx, chaosBin, "run", "--list", "--label", "breaker,session").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "session/legacy/sse") || strings.Contains(string(out), "wrapping/") {
		t.Errorf("--list: %v\n%s", err, out)
	}
}
