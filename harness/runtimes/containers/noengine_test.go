package containers

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers/containerstest"
)

// probeResult is what a "probe" helper run prints: Get's outcome.
type probeResult struct {
	Skip bool          `json:"skip"`
	Err  string        `json:"err"`
	Took time.Duration `json:"took"`
}

// helperProbe runs Get in a fresh process (its result is cached per
// process, and DOCKER_HOST must apply before testcontainers' first call)
// and prints the outcome as JSON.
func helperProbe() int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	e, err := Get(ctx)
	r := probeResult{Skip: IsSkip(err), Took: time.Since(start)}
	if err != nil {
		r.Err = err.Error()
	}
	if e != nil {
		_ = ShutdownDefault(ctx)
	}
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	return 0
}

// runProbe runs the probe helper with DOCKER_HOST=host and
// VMCP_CHAOS_REQUIRE_DOCKER=require ("" unset).
func runProbe(t *testing.T, host, require string) probeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, DockerHostEnv+"=") && !strings.HasPrefix(kv, RequireDockerEnv+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, helperEnv+"=probe", DockerHostEnv+"="+host)
	if require != "" {
		env = append(env, RequireDockerEnv+"="+require)
	}
	cmd.Env = env
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe helper: %v\n%s", err, out)
	}
	var r probeResult
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("probe helper printed %q: %v", out, err)
	}
	t.Logf("DOCKER_HOST=%s %s=%q: skip=%v after %s: %s", host, RequireDockerEnv, require, r.Skip, r.Took, r.Err)
	return r
}

// TestNoEngine: with DOCKER_HOST naming an engine that is not there, Get
// says so (never falling back to /var/run/docker.sock, even when an engine
// answers there): a skip naming DOCKER_HOST, or a failure when
// VMCP_CHAOS_REQUIRE_DOCKER=1. Needs no Docker engine.
func TestNoEngine(t *testing.T) {
	t.Parallel()
	const host = "unix:///nonexistent/docker.sock"
	t.Run("skip", func(t *testing.T) {
		t.Parallel()
		r := runProbe(t, host, "")
		if !r.Skip {
			t.Fatalf("want a skip, got skip=%v err=%q", r.Skip, r.Err)
		}
		for _, want := range []string{"no usable Docker engine", DockerHostEnv + "=" + host} {
			if !strings.Contains(r.Err, want) {
				t.Errorf("the skip reason lacks %q: %s", want, r.Err)
			}
		}
		if r.Took > ProbeTimeout {
			t.Errorf("the probe took %s (bound %s)", r.Took, ProbeTimeout)
		}
	})
	t.Run("require", func(t *testing.T) {
		t.Parallel()
		r := runProbe(t, host, "1")
		if r.Skip || r.Err == "" {
			t.Fatalf("want a failure with %s=1, got skip=%v err=%q", RequireDockerEnv, r.Skip, r.Err)
		}
		for _, want := range []string{"no usable Docker engine", DockerHostEnv + "=" + host, RequireDockerEnv + "=1"} {
			if !strings.Contains(r.Err, want) {
				t.Errorf("the error lacks %q: %s", want, r.Err)
			}
		}
	})
	t.Run("hung", func(t *testing.T) {
		t.Parallel()
		sock := containerstest.HungEngine(t)
		r := runProbe(t, "unix://"+sock, "")
		if !r.Skip || !strings.Contains(r.Err, "did not answer a ping within "+ProbeTimeout.String()) {
			t.Fatalf("want a skip after the probe's deadline, got skip=%v err=%q", r.Skip, r.Err)
		}
		// The probe gives up at ProbeTimeout (+100 ms); a second for a
		// loaded machine's scheduling.
		if r.Took < ProbeTimeout || r.Took > ProbeTimeout+time.Second {
			t.Errorf("Get returned after %s (the probe's bound is %s)", r.Took, ProbeTimeout)
		}
	})
}
