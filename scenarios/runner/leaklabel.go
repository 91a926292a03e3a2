package runner

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// leakLabel is the pprof label every goroutine of a scenario run carries
// (goroutines inherit their creator's labels), so a run's leak check sees
// only its own goroutines, also while other scenarios or tests run in the
// same process.
const leakLabel = "vmcp-chaos-run"

// leakWait is how long a run's goroutines have to end after its
// teardown: 5 s, twice goleak's default; under two -race suites an HTTP
// server's connection goroutine of a scenario that leaked nothing still
// waited for the server's lock 2.5 s after its Close.
const leakWait = 5 * time.Second

// runSeq numbers the runs of one process: the same scenario may run
// several times at once (against several targets).
var runSeq atomic.Uint64

// labelRun runs fn with a label naming this run of scenario name, and
// returns a check that fails when goroutines started under the label are
// still running (the idle HTTP connection loops aside). Call the check
// after fn's teardown, from outside fn. Goroutines started by other
// goroutines on the run's behalf carry no label; the package-wide check
// (runtimes.CheckLeaks in TestMain) is the one that sees those.
func labelRun(ctx context.Context, name string, fn func(ctx context.Context)) (check func() string) {
	value := name + "#" + strconv.FormatUint(runSeq.Add(1), 10)
	pprof.Do(ctx, pprof.Labels(leakLabel, value), fn)
	return func() string { return labelledLeaks(value) }
}

// labelledLeaks waits up to leakWait (backing off from 1 ms to 100 ms, as
// goleak does) for the goroutines labelled value to end, and describes
// those still running ("" when none).
func labelledLeaks(value string) string {
	delay := time.Millisecond
	deadline := time.Now().Add(leakWait)
	for {
		left := labelledStacks(value)
		if len(left) == 0 {
			return ""
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("goroutine leak: %d stack(s) of this run still running after its teardown:\n%s",
				len(left), strings.Join(left, "\n\n"))
		}
		time.Sleep(delay)
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// labelledStacks returns the stacks (pprof's debug=1 text: a count, then
// a frame a line) of the goroutines labelled leakLabel=value, the idle
// HTTP connection loops aside.
func labelledStacks(value string) []string {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		return []string{"read the goroutine profile: " + err.Error()}
	}
	want := strconv.Quote(leakLabel) + ":" + strconv.Quote(value)
	var left []string
	for _, rec := range strings.Split(buf.String(), "\n\n") {
		if !labelled(rec, want) || idleConnLoop(rec) {
			continue
		}
		left = append(left, strings.TrimSpace(rec))
	}
	return left
}

// labelled reports whether a profile record's label line (pprof prints
// `# labels: {"a":"1", "b":"2"}`, keys sorted) holds the pair want.
func labelled(rec, want string) bool {
	sc := bufio.NewScanner(strings.NewReader(rec))
	for sc.Scan() {
		labels, ok := strings.CutPrefix(sc.Text(), "# labels: ")
		if !ok {
			continue
		}
		return strings.Contains(labels, want+",") || strings.Contains(labels, want+"}")
	}
	return false
}

// idleConnLoop reports whether a profile record is one of net/http's idle
// connection goroutines.
func idleConnLoop(rec string) bool {
	for _, fn := range runtimes.IdleConnLoops {
		if strings.Contains(rec, "\t"+fn+"+") {
			return true
		}
	}
	return false
}
