package scenarios

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
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
// its scenarios start) and the processes of the containers it started
// (containers.Owns) since the previous sample, at least
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
// that of this process, its live descendants and the processes of its
// live containers (/proc/PID/stat: their threads' and their waited-for
// children's), in clock ticks.
func cpuTicks() (busy, all, self int64, ok bool) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0, false
	}
	if busy, all, ok = parseStat(stat); !ok {
		return 0, 0, 0, false
	}
	self, ok = treeTicks(os.Getpid(), containers.OwnsAny(), containers.Owns)
	return busy, all, self, ok
}

// treeTicks is the CPU time of the process root and of its live
// descendants, in clock ticks, and, when inContainers, of the processes
// whose container (/proc/PID/cgroup) ours says is ours: their parent is
// the container engine's shim, not root.
func treeTicks(root int, inContainers bool, ours func(id string) bool) (int64, bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	kids := map[int][]int{}
	var contained []int
	ticks := map[int]int64{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // ended meanwhile
		}
		ppid, t, ok := parseProcStat(b)
		if !ok {
			continue
		}
		kids[ppid] = append(kids[ppid], pid)
		ticks[pid] = t
		if inContainers {
			if cg, err := os.ReadFile("/proc/" + e.Name() + "/cgroup"); err == nil {
				if id := cgroupContainer(cg); id != "" && ours(id) {
					contained = append(contained, pid)
				}
			}
		}
	}
	if _, ok := ticks[root]; !ok {
		return 0, false
	}
	var sum int64
	counted := map[int]bool{}
	for todo := append([]int{root}, contained...); len(todo) > 0; {
		pid := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if counted[pid] {
			continue // a container's process is also its init's child
		}
		counted[pid] = true
		todo = append(todo, kids[pid]...)
		sum += ticks[pid]
	}
	return sum, true
}

// cgroupContainer is the id of the container a /proc/PID/cgroup names
// ("" for none): the last path segment of 64 hex digits, as Docker names
// its cgroups ("/docker/ID" with cgroup v1 or the cgroupfs driver,
// "docker-ID.scope" with the systemd driver).
func cgroupContainer(b []byte) string {
	id := ""
	for line := range bytes.Lines(b) {
		_, path, ok := bytes.Cut(bytes.TrimSpace(line), []byte(":"))
		if !ok {
			continue
		}
		if _, path, ok = bytes.Cut(path, []byte(":")); !ok {
			continue
		}
		for seg := range bytes.SplitSeq(path, []byte("/")) {
			if c, ok := bytes.CutPrefix(seg, []byte("docker-")); ok {
				seg, _ = bytes.CutSuffix(c, []byte(".scope"))
			}
			if isContainerID(seg) {
				id = string(seg)
			}
		}
	}
	return id
}

// isContainerID says whether b is a full container id: 64 lower-case hex
// digits.
func isContainerID(b []byte) bool {
	if len(b) != 64 {
		return false
	}
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
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
