package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testpar"
)

// parallelTests is the package's default -test.parallel: its two long
// tests wait on the processes they start, so they overlap even on two
// cores (see internal/testpar).
const parallelTests = 4

func TestMain(m *testing.M) {
	testpar.Default(parallelTests)
	code := m.Run()
	fixtureGW.remove()
	os.Exit(code)
}

// fixtureGWEnv is the variable the fixture profiles' command reads the
// fixture gateway binary from.
const fixtureGWEnv = "VMCP_CHAOS_FIXTUREGW"

// fixtureBuild is the fixture gateway binary, built once for the process.
type fixtureBuild struct {
	sync.Mutex
	dir, bin string
}

// fixtureGW is the process's fixture gateway build.
var fixtureGW fixtureBuild

// build builds harness/internal/fixturegw once and sets fixtureGWEnv to
// it for the whole process (a test's t.Setenv would keep the tests
// serial): set once, before any profile reads it, and never changed.
func (f *fixtureBuild) build(ctx context.Context) (string, error) {
	f.Lock()
	defer f.Unlock()
	if f.bin != "" {
		return f.bin, nil
	}
	dir, err := os.MkdirTemp("", "bench-fixturegw-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "fixturegw")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "../harness/internal/fixturegw").CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("build fixturegw: %w\n%s", err, out)
	}
	if err := os.Setenv(fixtureGWEnv, bin); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	f.dir, f.bin = dir, bin
	return bin, nil
}

// remove removes the binary build built, if any.
func (f *fixtureBuild) remove() {
	f.Lock()
	defer f.Unlock()
	if f.dir != "" {
		_ = os.RemoveAll(f.dir)
	}
}

// fixtureTarget builds harness/internal/fixturegw (once per process) and
// returns the target of scenarios/testdata/profiles/<name>.yaml, built as
// `chaos bench --profile` builds it.
func fixtureTarget(ctx context.Context, t *testing.T, name string) targets.Target {
	t.Helper()
	if _, err := fixtureGW.build(ctx); err != nil {
		t.Fatal(err)
	}
	target, err := targets.TargetConfig{Kind: "exec", Profile: filepath.Join("..", "scenarios", "testdata", "profiles", name+".yaml")}.Target(nil)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// TestRunFixtureB runs every bench step, scaled down, against fixture
// gateway b: its ready URL answers before its tools are listed
// (ready.tools: true), and it exposes tools under their own names
// ("{tool}", priority on conflicts), so the backends' tools must be
// named apart and found by origin marker. Every scenario measures (no
// healthy call fails, every fault is in force through the gateway) and
// carries the CPU figures against the direct backend.
func TestRunFixtureB(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the chaos and fixture gateway binaries and starts processes; not in -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	target := fixtureTarget(ctx, t, "fixture-b")
	if p := targets.ToolNamePatternOf(target); p != "{tool}" {
		t.Fatalf("fixture-b's tool name pattern %q, want {tool} (the premise of this test)", p)
	}
	bin, err := runtimes.BuildChaos(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res := runSplit(ctx, t, Config{Target: target, Runtime: runtimes.Process{Binary: bin}, Clients: 4,
		Duration: 300 * time.Millisecond, Calls: 400, CallTimeout: 10 * time.Second, Opens: 2, Sessions: 10,
		ErrorCalls: 10, StallTimeout: time.Second, StallCalls: 2, StallDeadline: 20 * time.Second,
		ScaleSessions: []int{10}, ScaleDuration: time.Second, ScaleRate: 50, CrashEvery: 500 * time.Millisecond})
	if res.Target != "fixture-b" || !strings.HasSuffix(res.Profile, "fixture-b.yaml") {
		t.Errorf("results name target %q, profile %q; want fixture-b and its profile", res.Target, res.Profile)
	}
	want := []string{"bench/calls/legacy", "bench/calls/modern", "bench/open/2-backends", "bench/open/10-sessions", "bench/open/4x500-tools",
		"bench/error/http-403", "bench/stall/1s-timeout", "bench/error/sigkill", "bench/scale/10-sessions"}
	var got []string
	for _, s := range res.Scenarios {
		got = append(got, s.Name)
		if s.Verdict != history.VerdictPassed {
			t.Errorf("%s: %s (%s)", s.Name, s.Verdict, s.Reason)
		}
		if strings.HasPrefix(s.Name, "bench/calls/") {
			for _, f := range []string{"direct.backend_cpu_ms_per_call", "gateway.backend_cpu_ms_per_call", "gateway.cpu_ms_per_call"} {
				if _, ok := s.Figures[f]; !ok {
					t.Errorf("%s: no figure %s (have %v)", s.Name, f, s.Figures)
				}
			}
		}
		checkFaultFigures(t, s.Name, s.Figures, 10, 2)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("scenarios %v, want %v", got, want)
	}
}
