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
