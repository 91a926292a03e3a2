package runtimes

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// TestSweepLeftovers: directories named for a dead owner are removed; those
// of live processes (this one included) and foreign names are kept.
func TestSweepLeftovers(t *testing.T) {
	dir := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skipf("no `true` to make a dead pid: %v", err)
	}
	deadPID := strconv.Itoa(dead.Process.Pid)
	self := strconv.Itoa(os.Getpid())
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := []string{mk("harness-backend-" + deadPID + "-1"), mk("harness-gateway-" + deadPID + "-2"), mk("harness-chaos-bin-" + deadPID + "-3")}
	kept := []string{mk("harness-backend-" + self + "-4"), mk("harness-backend-1-5"), mk("harness-backend-old"), mk("other-" + deadPID + "-6")}
	removed, err := SweepLeftovers(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	slices.Sort(gone)
	if !slices.Equal(removed, gone) {
		t.Fatalf("removed %v, want %v", removed, gone)
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	for _, p := range gone {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there", p)
		}
	}
}
