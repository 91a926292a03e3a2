package fakebackends

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestProgressBounded: a progress count that would keep a core busy for
// minutes is refused at load time with file:line: field and the range.
func TestProgressBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ src, want string }{
		{"name: a\ntools:\n  - name: slow\n    progress: 1000000000\n", "bad.yaml:4: tools[0].progress: 1000000000 is out of range: allowed 0 to 10000"},
		{"name: a\nfaults:\n  - kind: stall\n    stage: after_progress\n    progress: 1000000000\n", "bad.yaml:5: faults[0].progress: 1000000000 out of range"},
	} {
		if _, err := ParseScript([]byte(tc.src), "bad.yaml"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
	if _, err := ParseScript([]byte("name: a\ntools:\n  - name: slow\n    progress: 10000\n"), "ok.yaml"); err != nil {
		t.Errorf("progress at the bound refused: %v", err)
	}
}

// TestProgressStopsWhenClientLeaves: a tool sending progress with no
// interval stops as soon as its request's context ends (the client left),
// and when the backend stops, instead of running its whole count.
func TestProgressStopsWhenClientLeaves(t *testing.T) {
	t.Parallel()
	tool := ToolSpec{Name: "slow", Progress: MaxProgress}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	res, err := toolHandler(tool, make(chan struct{}))(ctx, mcp.CallToolRequest{})
	if !errors.Is(err, context.Canceled) || res != nil {
		t.Fatalf("after the client left: result %v, err %v; want context.Canceled", res, err)
	}
	done := make(chan struct{})
	close(done)
	res, err = toolHandler(tool, done)(context.Background(), mcp.CallToolRequest{})
	if !errors.Is(err, errStopped) || res != nil {
		t.Fatalf("after the backend stopped: result %v, err %v; want errStopped", res, err)
	}
	t.Logf("both stopped within %v", time.Since(start))
}

// TestScriptAttacks: values a script once took silently (a 2 MB tool name,
// thousands of faults, latencies adding up to hours) are refused at load
// time with file:line: field and the bound.
func TestScriptAttacks(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", MaxNameBytes+1)
	var many strings.Builder
	many.WriteString("name: a\nfaults:\n")
	for range MaxFaults + 1 {
		many.WriteString("  - {kind: tool_error, text: x}\n")
	}
	for _, tc := range []struct{ name, src, want string }{
		{"2 MB tool name", "name: a\ntools:\n  - name: " + strings.Repeat("n", 2<<20) + "\n", "bad.yaml:3: tools[0].name: 2097152 bytes: a name is at most 256 bytes"},
		{"257-byte tool name", "name: a\ntools:\n  - name: " + long + "\n", "bad.yaml:3: tools[0].name: 257 bytes"},
		{"257-byte script name", "name: " + long + "\n", "bad.yaml:1: name: 257 bytes"},
		{"257-byte prompt name", "name: a\nprompts:\n  - name: " + long + "\n", "bad.yaml:3: prompts[0].name: 257 bytes"},
		{"257-byte argument name", "name: a\nprompts:\n  - name: p\n    arguments: [{name: " + long + "}]\n", "bad.yaml:4: prompts[0].arguments[0].name: 257 bytes"},
		{"1,001 faults", many.String(), "bad.yaml:2: faults: 1001 faults: at most 1000"},
		{"latencies adding up to hours", "name: a\nfaults:\n  - {kind: latency, delay: 9m}\n  - {kind: latency, delay: 1m, jitter: 1s}\n", "bad.yaml:4: faults[1]: the latencies add up to 10m1s"},
		{"listen that is no address", "name: a\nlisten: nonsense\n", "bad.yaml:2: listen: bad address"},
	} {
		if _, err := ParseScript([]byte(tc.src), "bad.yaml"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %.300v, want %q", tc.name, err, tc.want)
		}
	}
	ok := "name: " + long[:MaxNameBytes] + "\ntools:\n  - name: " + long[:MaxNameBytes] + "\nfaults:\n  - {kind: latency, delay: 10m}\n"
	if _, err := ParseScript([]byte(ok), "ok.yaml"); err != nil {
		t.Errorf("values at the bounds refused: %v", err)
	}
}
