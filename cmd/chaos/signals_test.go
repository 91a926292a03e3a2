//go:build linux

package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
)

// TestRunSignals: SIGINT and SIGTERM at several points of a `chaos run`
// (before any scenario, during one, and with Docker during and after a
// container scenario) each end it with exit 130, the results and the
// report of what finished (the scenario cut short marked interrupted, never
// "overran its timeout"), no partial file in the output folder, and nothing
// it owned left: child processes, temporary directories, containers,
// networks, images.
func TestRunSignals(t *testing.T) {
	t.Parallel() // owns its processes, directories and ports (see TestMain)
	type point struct {
		name string
		args []string // after `chaos run`
		// when reports, from the output lines so far and the run's pid,
		// whether to send the signal now.
		when   func(lines []string, pid int) bool
		docker bool
	}
	started := func(lines []string, _ int) bool { return len(lines) > 0 }
	afterFirst := func(lines []string, _ int) bool {
		return len(lines) > 0 && strings.HasPrefix(lines[len(lines)-1], "[1/")
	}
	points := []point{
		{name: "before any scenario", args: []string{"--label", "wrapping && legacy"}, when: started},
		// The gateway and the backends are child processes.
		{name: "during a scenario", args: []string{"--target", "exec", "--label", "process"}, when: afterFirst},
		{name: "while building the image", args: []string{"--runtime", "container", "--label", "container-kill/legacy"}, docker: true,
			when: func(_ []string, pid int) bool { return len(dockerOwned(t, pid, "ps")) > 0 }},
		// The signal lands when the first container scenario has started
		// (its network exists), or once one finished: the short gateway
		// restart, while the longer kill (started first, beside it) runs.
		{name: "during a container scenario", args: []string{"--runtime", "container", "--label", "container-kill/legacy,container-kill/modern"}, docker: true,
			when: func(_ []string, pid int) bool { return len(dockerOwned(t, pid, "network")) > 0 }},
		{name: "after a container scenario", args: []string{"--runtime", "container", "--label", "container-gateway-restart/legacy,container-kill/modern"}, docker: true, when: afterFirst},
	}
	dockerOK := exec.Command("docker", "info").Run() == nil
	// Each point is its own run (pid, TMPDIR, output folder, Docker
	// labels), started at once from this test's goroutines, not as
	// parallel tests: those with Docker wait for one of the engine's turns
	// (dockerTurns at a time) without holding one of go test's parallel
	// slots, two of them at once (one after another, they were the
	// package's longest chain: six runs of 6-10 s), and those without run
	// beside them, not after them.
	var runs sync.WaitGroup
	for _, p := range points {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			runs.Go(func() {
				t.Run(p.name+"/"+sig.String(), func(t *testing.T) {
					if p.docker && !dockerOK {
						if os.Getenv(containers.RequireDockerEnv) == "1" {
							t.Fatal("no docker engine and " + containers.RequireDockerEnv + "=1")
						}
						t.Skip("no docker engine")
					}
					if p.docker {
						takeDockerTurn(t)
					}
					signalRun(t, p.args, p.docker, sig, p.when)
				})
			})
		}
	}
	runs.Wait()
}

func signalRun(t *testing.T, args []string, docker bool, sig syscall.Signal, when func([]string, int) bool) {
	tmp := t.TempDir() // TMPDIR of the run: only its directories are looked at
	outDir := filepath.Join(t.TempDir(), "out")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chaosBin, append(append([]string{"run"}, args...), "--out", filepath.Join(outDir, "results.json"))...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.WaitDelay = 5 * time.Second
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var seen []string
	var kids map[int]string
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("chaos run ended before the signal point; output:\n%s\n%s", strings.Join(seen, "\n"), stderr.String())
			}
			seen = append(seen, l)
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("signal point not reached; output:\n%s", strings.Join(seen, "\n"))
		}
		if when(seen, pid) {
			kids = childrenOf(pid)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			break wait
		}
	}
	for l := range lines {
		seen = append(seen, l)
	}
	err = cmd.Wait()
	out := strings.Join(seen, "\n")
	t.Logf("signal %s; output:\n%s\nstderr:\n%s", sig, out, stderr.String())

	// 1. Exit 130.
	if code := exitCodeOf(err); code != exitInterrupted {
		t.Errorf("exit %d (%v), want 130", code, err)
	}
	// 2. The results and the report of what finished.
	res := readResults(t, filepath.Join(outDir, "results.json"))
	if !res.Interrupted {
		t.Error("results: interrupted is not set")
	}
	cut := 0
	for _, s := range res.Scenarios {
		if strings.Contains(s.Reason, "overran") {
			t.Errorf("%s: %s %q: an interrupted scenario reported as overrunning", s.Name, s.Verdict, s.Reason)
		}
		if s.Verdict == history.VerdictInterrupted || (s.Verdict == history.VerdictSkipped && strings.Contains(s.Reason, "interrupted")) {
			cut++
		}
	}
	if cut == 0 {
		t.Errorf("no scenario marked interrupted or not run: %+v", res.Scenarios)
	}
	if st, err := os.Stat(filepath.Join(outDir, "results.html")); err != nil || st.Size() < 1000 {
		t.Errorf("results.html (the report): %v", err)
	}
	if _, err := os.Stat(filepath.Join(outDir, "results.events.json")); err != nil || res.EventsFile != "results.events.json" {
		t.Errorf("results.events.json (the event log, named %q by the results): %v", res.EventsFile, err)
	}
	// 3. No partial file.
	entries, _ := os.ReadDir(outDir)
	for _, e := range entries {
		if e.Name() != "results.json" && e.Name() != "results.events.json" && e.Name() != "results.html" {
			t.Errorf("left in the output folder: %s", e.Name())
		}
	}
	// 4. Nothing it owned is left.
	deadline := time.Now().Add(15 * time.Second)
	for kid, argv := range kids {
		for alive(kid) {
			if time.Now().After(deadline) {
				_ = syscall.Kill(kid, syscall.SIGKILL)
				t.Errorf("child %d (%s) outlived the interrupted run", kid, argv)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if left := ownedDirs(t, tmp, pid); len(left) > 0 {
		t.Errorf("temporary directories left: %v", left)
	}
	if docker {
		for _, what := range []string{"ps", "network", "image"} {
			if left := dockerOwned(t, pid, what); len(left) > 0 {
				t.Errorf("docker %s left by the interrupted run: %v", what, left)
			}
		}
	}
}

// dockerOwned lists the ids of the containers ("ps"), networks or images
// labelled as owned by pid.
func dockerOwned(t *testing.T, pid int, what string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	args := []string{what, "-q", "--filter", "label=" + containers.LabelOwnerPID + "=" + strconv.Itoa(pid)}
	switch what {
	case "ps":
		args = append(args[:1], append([]string{"-a"}, args[1:]...)...)
	case "network":
		args = append([]string{"network", "ls"}, args[1:]...)
	case "image":
		args = append([]string{"image", "ls", "-a"}, args[1:]...)
	}
	out, err := exec.CommandContext(ctx, "docker", args...).Output()
	if err != nil {
		t.Logf("docker %v: %v", args, err)
		return nil
	}
	return strings.Fields(string(out))
}
