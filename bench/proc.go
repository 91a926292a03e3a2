package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/PID/stat. It is
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// ProcSample is one reading of a process's CPU time and memory from /proc.
type ProcSample struct {
	// CPU is user + system CPU time so far.
	CPU time.Duration
	// RSS is the resident set size now, in bytes.
	RSS int64
	// PeakRSS is the high-water mark of the resident set (VmHWM), in
	// bytes.
	PeakRSS int64
}

// ReadProc reads pid's CPU time (/proc/PID/stat) and resident set
// (/proc/PID/status). pid 0 means this process.
func ReadProc(pid int) (ProcSample, error) {
	dir := "/proc/self"
	if pid > 0 {
		dir = "/proc/" + strconv.Itoa(pid)
	}
	var s ProcSample
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return s, err
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields we want follow the last ')'.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return s, fmt.Errorf("%s/stat: no ')' in %q", dir, stat)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return s, fmt.Errorf("%s/stat: %d fields after the command name, want at least 13", dir, len(f))
	}
	// f[0] is field 3 (state): utime is field 14, stime field 15.
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return s, fmt.Errorf("%s/stat: utime %q stime %q are not numbers", dir, f[11], f[12])
	}
	s.CPU = time.Duration(ut+st) * time.Second / clockTicks
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return s, fmt.Errorf("%s/status: %s %q: %w", dir, k, v, err)
		}
		if k == "VmRSS" {
			s.RSS = kb << 10
		} else {
			s.PeakRSS = kb << 10
		}
	}
	return s, nil
}

// startCPU starts measuring the CPU time pids spend (a pid of -1 is not
// measured: its figure is left out). The function it returns stops: each
// process's CPU time since the start (-1 when unreadable) and its sample
// now.
func startCPU(pids ...int) (stop func() ([]time.Duration, []ProcSample)) {
	before := make([]ProcSample, len(pids))
	for i, p := range pids {
		if p >= 0 {
			before[i], _ = ReadProc(p)
		}
	}
	return func() ([]time.Duration, []ProcSample) {
		d := make([]time.Duration, len(pids))
		now := make([]ProcSample, len(pids))
		for i, p := range pids {
			d[i] = -1
			if p < 0 {
				continue
			}
			s, err := ReadProc(p)
			if err != nil {
				continue
			}
			now[i] = s
			d[i] = s.CPU - before[i].CPU
		}
		return d, now
	}
}
