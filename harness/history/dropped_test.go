package history

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

func TestUnanswered(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{fmt.Errorf("transport error: %w", fmt.Errorf("Post \"http://gw/mcp\": %w", io.EOF)), "dropped"},
		{fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), "dropped"},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), "dropped"},
		// Words are never read: only typed errors and the wire decide.
		{errors.New("unexpected nil response"), ""},
		{errors.New("transport error: read tcp: connection reset by peer"), ""},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), "refused"},
		{errors.New("request failed with status 503: down"), ""},
		{errors.New(`backend "beta" unavailable: EOF`), ""},
		{fmt.Errorf("call: %w", errors.Join(io.EOF, errors.New("x"))), "dropped"},
		// A gateway's JSON-RPC error quoting its backend's reset answered.
		{fmt.Errorf("%w: transport error: read tcp: connection reset by peer", mcp.ErrInternalError), ""},
		{fmt.Errorf("%w: transport error: unexpected nil response", mcp.ErrInternalError), ""},
	}
	for _, c := range cases {
		if got := Unanswered(c.err); got != c.want {
			t.Errorf("Unanswered(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestDroppedCallOutcome: a backend that closes the connection mid-answer
// makes the call's outcome dropped, not error; an answered HTTP error
// stays error; the client's own deadline stays timeout.
func TestDroppedCallOutcome(t *testing.T) {
	b := startBackend(t, runtimes.InProcess{}, script("beta", fakebackends.TransportStreamableHTTP))
	rec := NewRecorder("dropped")
	c := dialBackend(t, b, RevisionLegacy, rec)
	ctx := ctxT(t, 30*time.Second)
	if err := b.SetFaults(ctx, faults.Fault{Kind: faults.KindTruncate, Match: faults.Match{Method: "tools/call"}, Params: &faults.Truncate{Size: 5}}); err != nil {
		t.Fatal(err)
	}
	if call := c.CallTool(ctx, "echo", map[string]any{"msg": "hi"}); call.Outcome != OutcomeDropped {
		t.Fatalf("truncated answer: outcome %s (%v), want dropped", call.Outcome, call.Err)
	}
	if err := b.SetFaults(ctx, http403); err != nil {
		t.Fatal(err)
	}
	c2 := dialBackend(t, b, RevisionLegacy, rec)
	if call := c2.CallTool(ctx, "echo", map[string]any{"msg": "hi"}); call.Outcome != OutcomeError {
		t.Fatalf("403: outcome %s (%v), want error", call.Outcome, call.Err)
	}
	if err := b.SetFaults(ctx, faults.Fault{Kind: faults.KindStall, Match: faults.Match{Method: "tools/call"}}); err != nil {
		t.Fatal(err)
	}
	c3 := dialBackend(t, b, RevisionLegacy, rec, WithCallTimeout(300*time.Millisecond))
	if call := c3.CallTool(ctx, "echo", map[string]any{"msg": "hi"}); call.Outcome != OutcomeTimeout {
		t.Fatalf("stall: outcome %s (%v), want timeout", call.Outcome, call.Err)
	}
	_ = b.ClearFaults(ctx)
}
