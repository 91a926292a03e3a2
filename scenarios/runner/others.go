package runner

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"
)

// OthersPressure is the share (percent of the machine's CPU time) that
// processes other than this one must use for the CPU's pressure to hold a
// Gate at its floor: under it the pressure is this process's own
// scenarios' (the gate's cap bounds those), not another suite's or
// build's.
const OthersPressure = 25

// othersWindow is the shortest span othersCPU measures over once it runs
// (a sustained load, not a lull of a few hundred ms), firstWindow the
// span of its first figure (and of one after a pause of a few windows).
const (
	othersWindow = 2 * time.Second
	firstWindow  = 500 * time.Millisecond
)

var others struct {
	sync.Mutex
	at              time.Time
	busy, all, self int64 // clock ticks: the machine's busy and total, this process's
	pct             float64
	ok              bool
}

// othersCPU is the share (0 to 100) of the machine's CPU time used by
// every process but this one, its descendants (the gateways and backends
// its scenarios start) and what else works for it (alsoOurs: its
// containers, and the container engine while it alone holds the host's
// container slots) since the previous sample, at least
// othersWindow ago (before that, the previous figure), from /proc/stat
// and /proc/PID/stat; it measures a new span (waiting firstWindow) when
// the last is older than three windows. ok is false where they cannot be
// read.
func othersCPU() (pct float64, ok bool) {
	others.Lock()
	defer others.Unlock()
	span := time.Since(others.at)
	if span < othersWindow {
		return others.pct, others.ok
	}
	busy, all, self, ok := cpuTicks()
	if !ok {
		return 0, false
	}
	if span > 3*othersWindow {
		others.busy, others.all, others.self = busy, all, self
		time.Sleep(firstWindow)
		if busy, all, self, ok = cpuTicks(); !ok {
			return 0, false
		}
	}
	if all > others.all {
		d := float64(busy-others.busy) - float64(self-others.self)
		others.pct = min(100, max(0, 100*d/float64(all-others.all)))
		others.ok = true
	}
	others.at, others.busy, others.all, others.self = time.Now(), busy, all, self
	return others.pct, others.ok
}

// cpuTicks reads the machine's busy and total CPU time (/proc/stat) and
// that of this process, its live descendants and what else works for it
// (alsoOurs), from /proc/PID/stat (their threads' and their waited-for
// children's), in clock ticks.
func cpuTicks() (busy, all, self int64, ok bool) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0, false
	}
	if busy, all, ok = parseStat(stat); !ok {
		return 0, 0, 0, false
	}
	self, ok = treeTicks(os.Getpid(), alsoOurs())
	return busy, all, self, ok
}

// parseStat reads the "cpu" line of /proc/stat: busy is every field but
// idle and iowait (user, nice, system, irq, softirq, steal), all their
// sum with idle and iowait (guest time is already in user).
func parseStat(b []byte) (busy, all int64, ok bool) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	fields := bytes.Fields(line)
	if len(fields) < 9 || string(fields[0]) != "cpu" {
		return 0, 0, false
	}
	for i, f := range fields[1:9] {
		v, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil || v < 0 {
			return 0, 0, false
		}
		all += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, all, true
}

// parseProcStat reads the parent's pid (field 4) and utime, stime,
// cutime and cstime (fields 14 to 17) of a /proc/PID/stat, after the
// command name in parentheses.
func parseProcStat(b []byte) (ppid int, ticks int64, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := bytes.Fields(b[i+1:]) // from field 3, the state
	if len(fields) < 15 {
		return 0, 0, false
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return 0, 0, false
	}
	for _, f := range fields[11:15] {
		v, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil || v < 0 {
			return 0, 0, false
		}
		ticks += v
	}
	return ppid, ticks, true
}
