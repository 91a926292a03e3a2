package scenarios_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers/containerstest"
)

// runSuiteWithout runs this suite's container specs in a fresh process
// (the engine is probed once per process) with DOCKER_HOST=host and
// VMCP_CHAOS_REQUIRE_DOCKER=require ("" unset), and returns its Ginkgo
// report, whether it exited 0, and how long it ran.
func runSuiteWithout(t *testing.T, host, require string) (types.Report, bool, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	report := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestScenarios$", "-test.count=1",
		"-ginkgo.label-filter="+scenarios.LabelContainer, "-ginkgo.json-report="+report)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != containers.DockerHostEnv && k != containers.RequireDockerEnv && k != containers.RuntimeEnv && k != ResultsEnv {
			env = append(env, kv)
		}
	}
	env = append(env, containers.DockerHostEnv+"="+host)
	if require != "" {
		env = append(env, containers.RequireDockerEnv+"="+require)
	}
	cmd.Env = env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run the suite: %v\n%s", err, out)
	}
	data, rerr := os.ReadFile(report)
	var reports []types.Report
	if rerr == nil {
		rerr = json.Unmarshal(data, &reports)
	}
	if rerr != nil || len(reports) != 1 {
		t.Fatalf("the suite's report (%d): %v\n%s", len(reports), rerr, out)
	}
	t.Logf("DOCKER_HOST=%s %s=%q: exit ok=%v after %s", host, containers.RequireDockerEnv, require, err == nil, took)
	return reports[0], err == nil, took
}

// TestContainerScenariosWithoutDocker: with no engine where DOCKER_HOST
// points (even though another may answer on /var/run/docker.sock), every
// container spec is skipped with the probe's reason; with
// VMCP_CHAOS_REQUIRE_DOCKER=1 each fails naming it (BeforeSuite, which
// probes, does not end the suite); an engine that
// accepts and never answers is given up on within the probe's 5 s. Needs
// no Docker engine.
func TestContainerScenariosWithoutDocker(t *testing.T) {
	t.Parallel()
	const host = "unix:///nonexistent/docker.sock"
	var want []string
	for _, sc := range scenarios.Catalogue() {
		if sc.HasLabel(scenarios.LabelContainer) {
			want = append(want, sc.Name)
		}
	}
	skipped := func(t *testing.T, r types.Report, reason string) {
		t.Helper()
		n := 0
		for _, s := range r.SpecReports {
			if s.LeafNodeType != types.NodeTypeIt {
				if s.State != types.SpecStatePassed {
					t.Errorf("%s: %s: %s", s.LeafNodeType, s.State, s.Failure.Message)
				}
				continue
			}
			if !slices.Contains(s.LeafNodeLabels, scenarios.LabelContainer) {
				continue // filtered out
			}
			n++
			if s.State != types.SpecStateSkipped || !strings.Contains(s.Failure.Message, reason) {
				t.Errorf("%s: %s (want skipped with %q): %s", s.FullText(), s.State, reason, s.Failure.Message)
			}
		}
		if n != len(want) {
			t.Errorf("%d container specs ran, want %d (%v)", n, len(want), want)
		}
	}
	t.Run("skip", func(t *testing.T) {
		t.Parallel()
		r, ok, _ := runSuiteWithout(t, host, "")
		if !ok {
			t.Error("the suite failed without Docker (want its container specs skipped)")
		}
		skipped(t, r, "no usable Docker engine: "+containers.DockerHostEnv+"="+host)
	})
	t.Run("require", func(t *testing.T) {
		t.Parallel()
		r, ok, _ := runSuiteWithout(t, host, "1")
		if ok {
			t.Error("the suite passed without Docker and with " + containers.RequireDockerEnv + "=1")
		}
		// A runtime that cannot start never aborts the run: BeforeSuite
		// passes and each container spec fails naming the probe.
		n := 0
		for _, s := range r.SpecReports {
			if s.LeafNodeType != types.NodeTypeIt {
				if s.State != types.SpecStatePassed {
					t.Errorf("%s: %s: %s", s.LeafNodeType, s.State, s.Failure.Message)
				}
				continue
			}
			if !slices.Contains(s.LeafNodeLabels, scenarios.LabelContainer) {
				continue // filtered out
			}
			n++
			if !s.State.Is(types.SpecStateFailed) {
				t.Errorf("%s: %s without Docker and with %s=1 (want failed)", s.FullText(), s.State, containers.RequireDockerEnv)
			}
			for _, w := range []string{"no usable Docker engine", containers.DockerHostEnv + "=" + host, containers.RequireDockerEnv + "=1"} {
				if !strings.Contains(s.Failure.Message, w) {
					t.Errorf("%s: the failure lacks %q: %s", s.FullText(), w, s.Failure.Message)
				}
			}
		}
		if n != len(want) {
			t.Errorf("%d container specs ran, want %d (%v)", n, len(want), want)
		}
	})
	t.Run("hung", func(t *testing.T) {
		t.Parallel()
		sock := containerstest.HungEngine(t)
		r, ok, _ := runSuiteWithout(t, "unix://"+sock, "")
		if !ok {
			t.Error("the suite failed with a hung engine (want its container specs skipped)")
		}
		skipped(t, r, "did not answer a ping within "+containers.ProbeTimeout.String())
		for _, s := range r.SpecReports {
			// BeforeSuite probes once; the bound plus a second of slack
			// (a loaded machine's scheduling).
			if s.LeafNodeType == types.NodeTypeBeforeSuite && s.RunTime > containers.ProbeTimeout+time.Second {
				t.Errorf("BeforeSuite (the engine probe) took %s (bound %s)", s.RunTime, containers.ProbeTimeout)
			}
		}
	})
}
