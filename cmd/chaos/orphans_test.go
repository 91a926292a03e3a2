//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKilledRunLeavesNoOrphans: SIGKILL of `chaos run` mid-run (gateway and
// backends running as processes) takes its child processes with it, and the
// next `chaos run` removes the temporary directories the killed run left.
func TestKilledRunLeavesNoOrphans(t *testing.T) {
	tmp := t.TempDir() // the runs' TMPDIR, so only their directories are looked at
	env := append(os.Environ(), "TMPDIR="+tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, chaosBin, "run", "--target", "exec", "--label", "process", "--out", filepath.Join(tmp, "r.json"))
	run.Env = env
	var out bytes.Buffer
	run.Stdout, run.Stderr = &out, &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	defer func() {
		if !waited {
			_ = run.Process.Kill()
			_ = run.Wait()
		}
	}()

	// Mid-run: a `chaos vmcp` and a `chaos backend` child are running.
	var kids map[int]string
	deadline := time.Now().Add(90 * time.Second)
	for {
		kids = childrenOf(run.Process.Pid)
		if hasArg(kids, "vmcp") && hasArg(kids, "backend") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no chaos vmcp and chaos backend children within 90s (children %v); output:\n%s", kids, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("children of chaos run (pid %d): %v", run.Process.Pid, kids)

	if err := run.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = run.Wait()
	waited = true

	// The children die with their parent.
	deadline = time.Now().Add(10 * time.Second)
	for pid := range kids {
		for alive(pid) {
			if time.Now().After(deadline) {
				for kid := range kids {
					_ = syscall.Kill(-kid, syscall.SIGKILL)
					_ = syscall.Kill(kid, syscall.SIGKILL)
				}
				t.Fatalf("child %d (%s) still runs 10s after chaos run was SIGKILLed", pid, kids[pid])
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// The killed run's directories are left behind...
	left := ownedDirs(t, tmp, run.Process.Pid)
	if len(left) == 0 {
		t.Fatalf("the killed run left no temporary directory named for its pid %d in %s: nothing for the sweep to prove", run.Process.Pid, tmp)
	}
	// ...and the next start removes them.
	next := exec.CommandContext(ctx, chaosBin, "run", "--list")
	next.Env = env
	msg, err := next.CombinedOutput()
	if err != nil {
		t.Fatalf("chaos run --list: %v\n%s", err, msg)
	}
	if still := ownedDirs(t, tmp, run.Process.Pid); len(still) > 0 {
		t.Fatalf("the next run left %v; its output:\n%s", still, msg)
	}
	if !strings.Contains(string(msg), "removed "+strconv.Itoa(len(left))+" temporary directories left by dead runs") {
		t.Errorf("the sweep was not reported:\n%s", msg)
	}
}

// childrenOf returns the processes whose parent is ppid, with their argv.
func childrenOf(ppid int) map[int]string {
	out := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(ppid) {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		out[pid] = strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")
	}
	return out
}

func hasArg(kids map[int]string, sub string) bool {
	for _, argv := range kids {
		f := strings.Fields(argv)
		if len(f) > 1 && f[1] == sub {
			return true
		}
	}
	return false
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// ownedDirs lists the harness directories in dir named for pid.
func ownedDirs(t *testing.T, dir string, pid int) []string {
	t.Helper()
	var out []string
	for _, prefix := range []string{"harness-backend-", "harness-gateway-", "harness-chaos-bin-"} {
		m, err := filepath.Glob(filepath.Join(dir, prefix+strconv.Itoa(pid)+"-*"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	return out
}
