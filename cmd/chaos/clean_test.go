//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
)

// deadPID returns the pid of a process that has exited (and been reaped).
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

// TestCleanSaysWhatItRemoved: chaos clean removes the temporary
// directories and the partial output files of dead processes, names each,
// leaves those of live ones, and says "nothing to clean" the second time.
func TestCleanSaysWhatItRemoved(t *testing.T) {
	tmp, out := t.TempDir(), t.TempDir()
	dead := strconv.Itoa(deadPID(t))
	live := strconv.Itoa(os.Getpid())
	deadDir := filepath.Join(tmp, "harness-backend-"+dead+"-x1")
	liveDir := filepath.Join(tmp, "harness-backend-"+live+"-x2")
	deadFile := filepath.Join(out, ".chaos-tmp-"+dead+"-123-report.html")
	liveFile := filepath.Join(out, ".chaos-tmp-"+live+"-456-report.html")
	for _, d := range []string{deadDir, liveDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{deadFile, liveFile, filepath.Join(out, "report.html")} {
		if err := os.WriteFile(f, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	clean := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, chaosBin, "clean", "--dir", out)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("chaos clean: %v\n%s", err, b)
		}
		return string(b)
	}
	got := clean()
	for _, want := range []string{"removed 1 temporary directories", deadDir, "removed 1 partial output files", deadFile} {
		if !strings.Contains(got, want) {
			t.Errorf("chaos clean output lacks %q:\n%s", want, got)
		}
	}
	for _, p := range []string{deadDir, deadFile} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s not removed", p)
		}
	}
	for _, p := range []string{liveDir, liveFile, filepath.Join(out, "report.html")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s of a live owner (or not a partial file) removed", p)
		}
	}
	// The second time there is nothing of ours left. Docker's leftovers
	// are the machine's: another suite's dead run (under .ci/load, the
	// other copy's SIGKILLed container run) may leave some meanwhile.
	got = clean()
	if strings.Contains(got, "temporary directories") || strings.Contains(got, "partial output files") || !strings.Contains(got, "nothing to clean") && !strings.Contains(got, "containers, networks and images") {
		t.Errorf("second chaos clean:\n%s", got)
	}
}

// TestSweepAfterSIGKILL: a container run SIGKILLed mid-scenario leaves its
// containers, network and image; the next command that starts anything,
// even a non-container `chaos run --list`, removes them and says so.
func TestSweepAfterSIGKILL(t *testing.T) {
	if exec.Command("docker", "info").Run() != nil {
		if os.Getenv(containers.RequireDockerEnv) == "1" {
			t.Fatal("no docker engine and " + containers.RequireDockerEnv + "=1")
		}
		t.Skip("no docker engine")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, chaosBin, "run", "--runtime", "container", "--label", "container-kill/legacy", "--out", filepath.Join(t.TempDir(), "r.json"))
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	pid := run.Process.Pid
	for len(dockerOwned(t, pid, "ps")) == 0 || len(dockerOwned(t, pid, "network")) == 0 {
		if ctx.Err() != nil {
			_ = run.Process.Kill()
			t.Fatal("no container and network of the run within 4 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = run.Process.Signal(syscall.SIGKILL)
	_ = run.Wait()
	// Any command starting meanwhile sweeps too (another test package,
	// another copy under .ci/load): when the leftovers are gone before ours
	// starts, only "nothing is left" can be checked.
	left := dockerOwned(t, pid, "ps")
	list := exec.CommandContext(ctx, chaosBin, "run", "--list")
	b, err := list.CombinedOutput()
	if err != nil {
		t.Fatalf("chaos run --list: %v\n%s", err, b)
	}
	reported := strings.Contains(string(b), "chaos run: removed") && strings.Contains(string(b), "containers, networks and images left by dead runs")
	switch {
	case reported:
	case len(left) == 0:
		t.Logf("the killed run's containers were swept by another process before chaos run --list started")
	case len(dockerOwned(t, pid, "ps")) == 0 && len(dockerOwned(t, pid, "network")) == 0:
		t.Logf("the killed run's containers %v went without chaos run --list reporting them: swept by another process meanwhile", left)
	default:
		t.Errorf("the sweep was not reported:\n%s", b)
	}
	for _, what := range []string{"ps", "network", "image"} {
		if left := dockerOwned(t, pid, what); len(left) > 0 {
			t.Errorf("docker %s of the killed run left after chaos run --list: %v", what, left)
		}
	}
}
