package kit

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CPU starvation: how long a process's threads waited on the run queue
// for a CPU (/proc/PID/task/*/schedstat, second field), sampled every
// starveTick. A stall (Stalls) is a moment this process ran nothing; a
// starved process ran, but late: on a loaded machine its threads wait
// their turn, and a timer due now fires when a CPU is free. A late event
// of the gateway says something of it only when the gateway's process
// was not kept waiting for that long.
const starveTick = 50 * time.Millisecond

// starveSample is the run-queue wait of each watched process so far.
type starveSample struct {
	at     time.Time
	waited []time.Duration // per watched pid, in order
}

// starvation samples the run-queue wait of the processes it watches.
type starvation struct {
	mu      sync.Mutex
	pids    []int
	samples []starveSample
}

// watch adds pid (a gateway process) to the processes sampled.
func (s *starvation) watch(pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pids {
		if p == pid {
			return
		}
	}
	s.pids = append(s.pids, pid)
	for i := range s.samples { // unknown before: counted from the next sample
		s.samples[i].waited = append(s.samples[i].waited, -1)
	}
}

// sample records the run-queue wait of every watched process now.
func (s *starvation) sample(now time.Time) {
	s.mu.Lock()
	pids := append([]int(nil), s.pids...)
	s.mu.Unlock()
	if len(pids) == 0 { // nothing watched (WatchStallsOnly)
		return
	}
	waited := make([]time.Duration, len(pids))
	for i, pid := range pids {
		waited[i] = runQueueWait(pid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(waited) < len(s.pids) { // a pid added meanwhile
		waited = append(waited, -1)
	}
	s.samples = append(s.samples, starveSample{at: now, waited: waited})
}

// starved is how long the most starved watched process was kept from a
// CPU between from and to, per CPU: its threads' run-queue wait in the
// samples spanning the window, divided by the number of CPUs (a Go
// process runs up to that many threads at once; when all of them wait
// the whole window, that is the window). Samples bracket the window, so
// up to one tick on each side may count.
func (s *starvation) starved(from, to time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	first, last := -1, -1
	for i, sm := range s.samples {
		if !sm.at.After(from) {
			first = i
		}
		if last < 0 && !sm.at.Before(to) {
			last = i
		}
	}
	if first < 0 || last < 0 || last <= first {
		return 0
	}
	var most time.Duration
	a, b := s.samples[first], s.samples[last]
	for i := range min(len(a.waited), len(b.waited)) {
		if a.waited[i] < 0 || b.waited[i] < 0 {
			continue
		}
		most = max(most, b.waited[i]-a.waited[i])
	}
	return most / time.Duration(runtime.NumCPU())
}

// runQueueWait is how long pid's threads have waited on the run queue in
// all (-1 when it cannot be read: no such process, no schedstat).
func runQueueWait(pid int) time.Duration {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return -1
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		sum += time.Duration(ns)
	}
	return sum
}
