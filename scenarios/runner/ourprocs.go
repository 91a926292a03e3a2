package runner

import (
	"bytes"
	"os"
	"strconv"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
	"github.com/vmcp-chaos/vmcp-chaos/internal/hostslot"
)

// beyondTree says which processes outside this process's tree work for
// it, so their CPU is its own, not other processes' (othersCPU).
type beyondTree struct {
	// container says whether a container id is this process's
	// (containers.Owns); nil: none is. Its processes' parent is the
	// container engine's shim.
	container func(id string) bool
	// slotHolders are the pids holding the host's container slots.
	// When every one is in this process's tree, the container engine
	// (dockerd, containerd and their children: shims, runc, the port
	// proxies, iptables) starts, pauses and removes containers for this
	// process alone.
	slotHolders []int
}

// alsoOurs is beyondTree for this process now.
func alsoOurs() beyondTree {
	var b beyondTree
	if containers.OwnsAny() {
		b.container = containers.Owns
	}
	b.slotHolders, _ = hostslot.Holders(containerSlotKind)
	return b
}

// treeTicks is the CPU time of the process root, of its live descendants
// and of the processes beyond says work for it, in clock ticks.
func treeTicks(root int, beyond beyondTree) (int64, bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	kids := map[int][]int{}
	ticks := map[int]int64{}
	var contained, engine []int
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
		if isEngine(statComm(b)) {
			engine = append(engine, pid)
		}
		if beyond.container != nil {
			if cg, err := os.ReadFile("/proc/" + e.Name() + "/cgroup"); err == nil {
				if id := cgroupContainer(cg); id != "" && beyond.container(id) {
					contained = append(contained, pid)
				}
			}
		}
	}
	if _, ok := ticks[root]; !ok {
		return 0, false
	}
	counted := map[int]bool{}
	var sum int64
	walk := func(roots []int) {
		for todo := roots; len(todo) > 0; {
			pid := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			if counted[pid] {
				continue // a container's process is also its init's child
			}
			counted[pid] = true
			todo = append(todo, kids[pid]...)
			sum += ticks[pid]
		}
	}
	walk([]int{root})
	engineOurs := len(beyond.slotHolders) > 0
	for _, pid := range beyond.slotHolders {
		engineOurs = engineOurs && counted[pid]
	}
	walk(contained)
	if engineOurs {
		walk(engine)
	}
	return sum, true
}

// isEngine says whether a command name is the container engine's:
// dockerd, or containerd and its shims.
func isEngine(comm string) bool {
	return comm == "dockerd" || strings.HasPrefix(comm, "containerd")
}

// statComm is the command name in a /proc/PID/stat, between its
// parentheses ("" when it has none).
func statComm(b []byte) string {
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return ""
	}
	return string(b[i+1 : j])
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
