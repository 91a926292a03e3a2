package targets

import (
	"errors"
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

func TestStartGuard(t *testing.T) {
	t.Parallel()
	var g StartGuard
	gw := &TargetStartError{Target: "gw", Err: errors.New("not ready within 30s")}
	g.Failed(errors.New("harness: backends[0]: missing name")) // not the gateway's: does not count
	g.Failed(gw)
	if why := g.Tripped(); why != "" {
		t.Fatalf("tripped after one failure: %s", why)
	}
	g.Started()
	g.Failed(gw)
	if g.Tripped() != "" {
		t.Fatal("a start in between resets the count")
	}
	g.Failed(gw)
	if why := g.Tripped(); !strings.Contains(why, "failed to start 2 times in a row") || !strings.Contains(why, "not ready within 30s") {
		t.Fatalf("tripped: %q", why)
	}
	var nilGuard *StartGuard
	nilGuard.Failed(gw)
	nilGuard.Started()
	if nilGuard.Tripped() != "" {
		t.Fatal("a nil guard never trips")
	}
}

// Serial: it sets the harness's output directory (t.Setenv), which the
// parallel tests must not see.
func TestQuoteTailLastLines(t *testing.T) {
	t.Setenv(runtimes.OutputDirEnv, t.TempDir())
	var lines []string
	for i := range 50 {
		lines = append(lines, "line "+strings.Repeat("x", i%3)+string(rune('a'+i%26)))
	}
	q := runtimes.QuoteTail(strings.Join(lines, "\n"))
	if !strings.Contains(q, "(last 20 of 50 lines)") || strings.Contains(q, lines[29]+"\n") || !strings.Contains(q, lines[49]) || !strings.Contains(q, "(the whole output: ") {
		t.Fatalf("QuoteTail: %s", q)
	}
}
