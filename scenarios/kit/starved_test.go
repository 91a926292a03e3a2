package kit

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// TestStarvedFromSamples: the run-queue wait between the samples that
// bracket a window, per CPU, of the most starved process; nothing when
// the window is not bracketed or a process was not yet watched.
func TestStarvedFromSamples(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	cpus := time.Duration(runtime.NumCPU())
	s := &starvation{pids: []int{1, 2}, samples: []starveSample{
		{at: at(0), waited: []time.Duration{0, -1}},
		{at: at(100), waited: []time.Duration{10 * time.Millisecond, 0}},
		{at: at(200), waited: []time.Duration{30 * time.Millisecond, 400 * time.Millisecond}},
		{at: at(300), waited: []time.Duration{50 * time.Millisecond, 400 * time.Millisecond}},
	}}
	if got, want := s.starved(at(100), at(200)), 400*time.Millisecond/cpus; got != want {
		t.Errorf("window 100..200: %s, want the second process's 400 ms / %d CPUs = %s", got, cpus, want)
	}
	if got, want := s.starved(at(0), at(100)), 10*time.Millisecond/cpus; got != want {
		t.Errorf("window 0..100: %s, want the first process's only (the second was not watched yet) %s", got, want)
	}
	if got := s.starved(at(250), at(400)); got != 0 {
		t.Errorf("a window past the last sample: %s, want 0", got)
	}
	if got := s.starved(at(-50), at(100)); got != 0 {
		t.Errorf("a window before the first sample: %s, want 0", got)
	}
}

// TestRunQueueWaitOfThisProcess: this process's threads' run-queue wait
// is readable (schedstat) and never goes back; a process that does not
// exist reads -1.
func TestRunQueueWaitOfThisProcess(t *testing.T) {
	a := runQueueWait(os.Getpid())
	if a < 0 {
		t.Skip("no /proc/PID/task/*/schedstat here (kernel without schedstats): Starved is 0, and timing checks are judged as before")
	}
	done := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(done) {
	}
	if b := runQueueWait(os.Getpid()); b < a {
		t.Errorf("run-queue wait went back: %s then %s", a, b)
	}
	if w := runQueueWait(1 << 30); w != -1 {
		t.Errorf("a process that does not exist: %s, want -1", w)
	}
}
