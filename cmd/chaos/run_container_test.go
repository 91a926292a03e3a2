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

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
)

// TestRunContainerWithoutDocker: `chaos run --runtime container` with
// DOCKER_HOST naming no engine (whether or not one answers on the default
// socket) skips the container scenarios naming the probe's reason and exits
// 0; with VMCP_CHAOS_REQUIRE_DOCKER=1 the run still goes on (a runtime that
// cannot start never aborts it): each scenario that needs the engine fails
// naming the probe's reason, the results are written, and it exits 1.
// Needs no Docker engine.
func TestRunContainerWithoutDocker(t *testing.T) {
	const host = "unix:///nonexistent/docker.sock"
	run := func(t *testing.T, require string) (string, int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		results := filepath.Join(t.TempDir(), "results.json")
		cmd := exec.CommandContext(ctx, chaosBin, "run", "--runtime", "container", "--label", "container-kill/legacy,wrapping/legacy/streamable-http",
			"--out", results)
		var env []string
		for _, kv := range os.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			if k != containers.DockerHostEnv && k != containers.RequireDockerEnv {
				env = append(env, kv)
			}
		}
		cmd.Env = append(env, containers.DockerHostEnv+"="+host)
		if require != "" {
			cmd.Env = append(cmd.Env, containers.RequireDockerEnv+"="+require)
		}
		out, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("chaos run: %v\n%s", err, out)
		}
		t.Logf("%s=%q: exit %d\n%s", containers.RequireDockerEnv, require, code, out)
		return string(out), code, results
	}
	t.Run("skip", func(t *testing.T) {
		t.Parallel()
		out, code, _ := run(t, "")
		if code != 0 {
			t.Errorf("exit %d, want 0 (skipped)", code)
		}
		for _, want := range []string{"container scenarios will be skipped", "0 passed, 0 failed, 0 inconclusive, 2 skipped",
			"SKIPPED      container-kill/legacy", "SKIPPED      wrapping/legacy/streamable-http", "no usable Docker engine: " + containers.DockerHostEnv + "=" + host} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q", want)
			}
		}
	})
	t.Run("require", func(t *testing.T) {
		t.Parallel()
		out, code, results := run(t, "1")
		if code != exitFailed {
			t.Errorf("exit %d, want %d", code, exitFailed)
		}
		for _, want := range []string{"container scenarios will fail", "[1/2 ", "[2/2 ", "0 passed, 2 failed, 0 inconclusive, 0 skipped",
			"no usable Docker engine: " + containers.DockerHostEnv + "=" + host, containers.RequireDockerEnv + "=1"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q", want)
			}
		}
		res := readResults(t, results)
		for _, s := range res.Scenarios {
			if s.Verdict != history.VerdictFailed || !strings.Contains(s.Reason, "no usable Docker engine") {
				t.Errorf("%s: %s %q, want failed naming the probe", s.Name, s.Verdict, s.Reason)
			}
		}
		if len(res.Scenarios) != 2 {
			t.Errorf("%d scenarios in the results, want 2", len(res.Scenarios))
		}
	})
}
