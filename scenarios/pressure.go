package scenarios

import (
	"bytes"
	"os"
	"strconv"
)

// cpuPressure is the share (0 to 100) of the last 10 s in which some
// runnable task of this machine (or of its cgroup) waited for a CPU:
// Linux's pressure stall information, /proc/pressure/cpu "some avg10".
// ok is false where it cannot be read (another OS, an old kernel).
func cpuPressure() (pct float64, ok bool) {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0, false
	}
	return parsePressure(b)
}

// parsePressure reads "some avg10=N" from a /proc/pressure file.
func parsePressure(b []byte) (float64, bool) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		fields := bytes.Fields(line)
		if len(fields) < 2 || string(fields[0]) != "some" {
			continue
		}
		v, found := bytes.CutPrefix(fields[1], []byte("avg10="))
		if !found {
			return 0, false
		}
		pct, err := strconv.ParseFloat(string(v), 64)
		return pct, err == nil && pct >= 0 && pct <= 100
	}
	return 0, false
}
