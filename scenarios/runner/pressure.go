package runner

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"
)

// cpuPressure is the share (0 to 100) of time in which some runnable
// task of this machine (or of its cgroup) waited for a CPU, from Linux's
// pressure stall information (/proc/pressure/cpu): the larger of its
// 10-second average ("some avg10", which lags a burst) and the share
// over the last recentWindow (from its "total"). ok is false where it
// cannot be read (another OS, an old kernel).
func cpuPressure() (pct float64, ok bool) {
	b, err := os.ReadFile(pressureFile)
	if err != nil {
		return 0, false
	}
	avg10, total, ok := parsePressure(b)
	if !ok {
		return 0, false
	}
	return max(avg10, recentPressure(total)), true
}

// pressureFile is Linux's CPU pressure stall information.
const pressureFile = "/proc/pressure/cpu"

// recentWindow is the shortest span recentPressure measures over.
const recentWindow = 200 * time.Millisecond

var recent struct {
	sync.Mutex
	at    time.Time
	total int64 // "some total", microseconds
	pct   float64
}

// recentPressure is the share of time some task waited for a CPU since
// the previous sample at least recentWindow ago, given "some total" now;
// it measures a new span (waiting recentWindow) when the last is older
// than a second.
func recentPressure(total int64) float64 {
	recent.Lock()
	defer recent.Unlock()
	now := time.Now()
	if now.Sub(recent.at) > time.Second {
		recent.at, recent.total = now, total
		time.Sleep(recentWindow)
		b, err := os.ReadFile(pressureFile)
		if err != nil {
			return 0
		}
		var ok bool
		if _, total, ok = parsePressure(b); !ok {
			return 0
		}
		now = time.Now()
	}
	if span := now.Sub(recent.at); span >= recentWindow {
		recent.pct = min(100, max(0, 100*float64(total-recent.total)/float64(span.Microseconds())))
		recent.at, recent.total = now, total
	}
	return recent.pct
}

// parsePressure reads "some avg10=N ... total=T" from a /proc/pressure
// file.
func parsePressure(b []byte) (avg10 float64, total int64, ok bool) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		fields := bytes.Fields(line)
		if len(fields) < 2 || string(fields[0]) != "some" {
			continue
		}
		var haveAvg, haveTotal bool
		for _, f := range fields[1:] {
			if v, found := bytes.CutPrefix(f, []byte("avg10=")); found {
				p, err := strconv.ParseFloat(string(v), 64)
				if err != nil || p < 0 || p > 100 {
					return 0, 0, false
				}
				avg10, haveAvg = p, true
			}
			if v, found := bytes.CutPrefix(f, []byte("total=")); found {
				t, err := strconv.ParseInt(string(v), 10, 64)
				if err != nil || t < 0 {
					return 0, 0, false
				}
				total, haveTotal = t, true
			}
		}
		return avg10, total, haveAvg && haveTotal
	}
	return 0, 0, false
}
