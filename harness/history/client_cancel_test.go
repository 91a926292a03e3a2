package history

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// TestCancelledCallSendsNotification: a legacy client whose call is
// cancelled follows it with notifications/cancelled naming the request's
// id (mcp-go sends none over HTTP); a modern client does not (ending the
// request is the cancellation there), unless asked.
func TestCancelledCallSendsNotification(t *testing.T) {
	stall := faults.Fault{Kind: faults.KindStall, Match: faults.Match{Method: "tools/call", Tool: "slow"}, Params: &faults.Stall{Stage: faults.StageBeforeHeaders}}
	for _, tc := range []struct {
		rev  Revision
		opts []ClientOption
		want int
	}{
		{RevisionLegacy, nil, 1},
		{RevisionLegacy, []ClientOption{WithCancelNotifications(false)}, 0},
		{RevisionModern, nil, 0},
	} {
		b := startBackend(t, runtimes.InProcess{}, script("b", fakebackends.TransportStreamableHTTP, stall))
		rec := NewRecorder("cancel")
		c := dialBackend(t, b, tc.rev, rec, tc.opts...)
		ctx, cancel := context.WithCancel(ctxT(t, 10*time.Second))
		done := make(chan *Call, 1)
		go func() { done <- c.CallTool(ctx, "slow", nil) }()
		fb, _ := runtimes.FakeBackend(b)
		testwait.For(t, 5*time.Second, "the call to reach the backend", func() bool { return fb.InFlight() > 0 })
		cancel()
		call := <-done
		if call.Outcome == OutcomeOK {
			t.Fatalf("%s: a cancelled call succeeded", tc.rev)
		}
		// Wait for the expected notification; when none is expected, give
		// one the time to arrive anyway.
		cancels := func() int {
			reqs, err := b.Requests(ctxT(t, 5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, r := range reqs {
				if r.Method == "notifications/cancelled" {
					n++
				}
			}
			return n
		}
		wait := 300 * time.Millisecond
		if tc.want > 0 {
			wait = 3 * time.Second
		}
		for end := time.Now().Add(wait); time.Now().Before(end) && cancels() < max(tc.want, 1); {
			time.Sleep(20 * time.Millisecond)
		}
		if got := cancels(); got != tc.want {
			t.Errorf("%s (%d options): %d notifications/cancelled, want %d", tc.rev, len(tc.opts), got, tc.want)
		}
		if tc.want > 0 {
			// The client notes the send once it returned, in the
			// background: the backend may log the notification first.
			notes := func() string {
				s := ""
				for _, e := range rec.Events() {
					s += e.Note + "\n"
				}
				return s
			}
			const sent = "sent notifications/cancelled for request"
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end) && !strings.Contains(notes(), sent); {
				time.Sleep(20 * time.Millisecond)
			}
			if n := notes(); !strings.Contains(n, sent) {
				t.Errorf("no note of the notification within 3 s: %s", n)
			}
		}
		_ = c.Close(context.Background())
	}
}

// TestMCPGoLogsGoToTheTimeline: mcp-go's own log lines ("failed to send
// close request" when the server is gone) are notes on the recorder,
// never lines on stderr that would interleave with a verdict table.
func TestMCPGoLogsGoToTheTimeline(t *testing.T) {
	b, err := runtimes.InProcess{}.Start(ctxT(t, 30*time.Second), script("gone", fakebackends.TransportStreamableHTTP))
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder("logs")
	c, err := Dial(ctxT(t, 10*time.Second), b.URL(), RevisionLegacy, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = c.Close(context.Background())
	for _, e := range rec.Events() {
		if e.Kind == EventNote && strings.Contains(e.Note, "mcp-go (") && strings.Contains(e.Note, "close request") {
			return
		}
	}
	var notes []string
	for _, e := range rec.Events() {
		notes = append(notes, e.Note)
	}
	t.Fatalf("no mcp-go note about the close request: %q", notes)
}
