package kit

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestStallsSeesAStoppedProcess: the test process is stopped (SIGSTOP)
// for 300 ms, as a loaded machine may leave it unscheduled; the watcher
// records that stall, and the window around it overlaps it. A child
// process continues it (twice, in case the first is lost).
func TestStallsSeesAStoppedProcess(t *testing.T) {
	s := WatchStalls()
	defer s.Stop()
	time.Sleep(50 * time.Millisecond)
	pid := os.Getpid()
	cont := exec.Command("sh", "-c", fmt.Sprintf("sleep 0.3; kill -CONT %d; sleep 1; kill -CONT %d", pid, pid))
	if err := cont.Start(); err != nil {
		t.Skipf("no sh to continue the stopped test process: %v", err)
	}
	defer func() { _ = cont.Wait() }()
	before := time.Now()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The watcher records the stall when it next runs after the stop; on
	// a loaded machine that can be later than the test goroutine (both
	// copies of a suite run at once once saw nothing within 50 ms).
	for end := time.Now().Add(3 * time.Second); s.Max() < 200*time.Millisecond && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	after := time.Now()
	if m := s.Max(); m < 200*time.Millisecond {
		t.Errorf("a 300 ms stop: longest stall %s", m)
	}
	if o := s.Overlap(before, after); o < 200*time.Millisecond || o > after.Sub(before) {
		t.Errorf("stalled %s within the %s around the stop", o, after.Sub(before))
	}
	if o := s.Overlap(before.Add(-time.Hour), before.Add(-time.Minute)); o != 0 {
		t.Errorf("stalled %s before the watch began", o)
	}
}
