package main

import (
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

// TestBenchFlags: bad sizes of the error, stall and scale figures are
// usage errors (exit 2) naming the flag, before anything starts.
func TestBenchFlags(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--steps", "calls,nope"}, `--steps "nope"`},
		{[]string{"--error-calls", "0"}, "--error-calls 0"},
		{[]string{"--pairs", "0"}, "--pairs 0"},
		{[]string{"--stall-timeout", "0s"}, "--stall-timeout 0s"},
		{[]string{"--stall-timeout", "2s", "--stall-deadline", "2s"}, "--stall-deadline 2s"},
		{[]string{"--stall-calls", "0"}, "--stall-calls 0"},
		{[]string{"--scale-sessions", "100,0"}, "--scale-sessions 0"},
		{[]string{"--scale-sessions", "x"}, "--scale-sessions"},
		{[]string{"--scale-duration", "-1s"}, "--scale-duration -1s"},
		{[]string{"--scale-rate", "0"}, "--scale-rate 0"},
		{[]string{"--crash-every", "1ms"}, "--crash-every 1ms"},
	} {
		out, err := exec.CommandContext(ctx, chaosBin, append([]string{"bench"}, tc.args...)...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("bench %v: err %v (want exit status 2), output %s", tc.args, err, out)
		}
	}
}

// TestBenchProfilesFlags: several --profile are read before anything
// starts; a bad one, the same one twice, or the one-profile override
// flags with several are usage errors (exit 2) naming the fault.
func TestBenchProfilesFlags(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	good := filepath.Join("..", "..", "profiles", "chaos-vmcp.yaml")
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\ncommand: [x]\nnoSuchField: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--profile", good, "--profile", missing}, "nope.yaml"},
		{[]string{"--profile", good, "--profile", bad}, "bad.yaml:3"},
		{[]string{"--profile", good, "--profile", good}, "given twice"},
		{[]string{"--profile", good, "--profile", bad, "--gateway-cmd", "x"}, "not with 2 --profile"},
	} {
		out, err := exec.CommandContext(ctx, chaosBin, append([]string{"bench"}, tc.args...)...).CombinedOutput()
		if exitOf(err) != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("bench %v: exit %d (want 2), output %s (want %q)", tc.args, exitOf(err), out, tc.want)
		}
		if strings.Contains(string(out), "starting") {
			t.Errorf("bench %v: started a topology before every profile was read: %s", tc.args, out)
		}
	}
}

// TestBenchSideBySide benches fixture gateways a and b in one run (b's
// ready URL answers before its tools are listed, and it names tools
// "{tool}"): both measure, the terminal shows a column per gateway with
// the CPU figures against the direct backend, and the one results file
// holds a run per gateway that chaos report renders side by side.
func TestBenchSideBySide(t *testing.T) {
	t.Parallel() // owns its processes, directories and ports (see TestMain)
	if testing.Short() {
		t.Skip("builds the fixture gateway and starts processes; not in -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	fixture := filepath.Join(dir, "fixturegw")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", fixture, "../../harness/internal/fixturegw").CombinedOutput(); err != nil {
		t.Fatalf("build fixturegw: %v\n%s", err, out)
	}
	profiles := filepath.Join("..", "..", "scenarios", "testdata", "profiles")
	out := filepath.Join(dir, "bench.json")
	cmd := exec.CommandContext(ctx, chaosBin, "bench", "--profile", filepath.Join(profiles, "fixture-a.yaml"), "--profile", filepath.Join(profiles, "fixture-b.yaml"),
		"--steps", "calls", "--revision", "legacy", "--clients", "2", "--duration", "300ms", "--opens", "2", "--sessions", "0", "--out", out)
	cmd.Env = append(os.Environ(), "VMCP_CHAOS_FIXTUREGW="+fixture)
	b, err := cmd.CombinedOutput()
	if exitOf(err) != 0 {
		t.Fatalf("bench: exit %d\n%s", exitOf(err), b)
	}
	text := string(b)
	var header string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "SCENARIO / FIGURE") {
			header = line
		}
	}
	if f := strings.Fields(header); len(f) != 5 || f[3] != "fixture-a" || f[4] != "fixture-b" {
		t.Errorf("side-by-side header %q, want SCENARIO / FIGURE fixture-a fixture-b\n%s", header, text)
	}
	for _, want := range []string{"bench/calls/legacy", "ratio.cpu_per_call", "ratio.backend_amplification", "bench/open/2-backends"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q\n%s", want, text)
		}
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := reports.DecodeAll(data, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Target != "fixture-a" || runs[1].Target != "fixture-b" {
		t.Fatalf("results file: %d runs, want fixture-a then fixture-b", len(runs))
	}
	for _, r := range runs {
		if len(r.Scenarios) != 2 || r.Failed() {
			t.Errorf("%s: scenarios %+v, want bench/calls/legacy and bench/open/2-backends, passed", r.Target, r.Scenarios)
		}
	}
	page := filepath.Join(dir, "bench.html")
	if b, err := exec.CommandContext(ctx, chaosBin, "report", out, "-o", page).CombinedOutput(); exitOf(err) != 0 {
		t.Fatalf("report: exit %d\n%s", exitOf(err), b)
	}
	html, _ := os.ReadFile(page)
	for _, want := range []string{"scorecard: 2 runs side by side", "bench.json: fixture-a", "bench.json: fixture-b", "figures-cmp", "ratio.backend_amplification"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report page lacks %q", want)
		}
	}
}
