package history

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// cancelNotifyTimeout bounds sending one notifications/cancelled.
const cancelNotifyTimeout = 2 * time.Second

// sendsCancel reports whether the client follows an abandoned call with a
// notifications/cancelled (WithCancelNotifications): by default on every
// stateful revision the gateway agreed (whatever the client asked for; a
// gateway may agree an older revision than a modern client's), where a
// dropped connection is no cancellation.
func (c *Client) sendsCancel() bool {
	if c.opts.cancelNotify != nil {
		return *c.opts.cancelNotify
	}
	return !mcp.IsModernProtocol(c.ProtocolVersion())
}

// notifyCancelled sends notifications/cancelled for the request the call
// sent (its id captured off the wire by idCapture), off the caller's path
// (the call returns at once) and bounded; Close waits for it. It is
// recorded as a note.
func (c *Client) notifyCancelled(ctx context.Context, slot *idSlot, method, target string) {
	id, ok := slot.get()
	if !ok {
		c.rec.Note("%s: %s %s ended (%v) before its request was sent: nothing to cancel", c.opts.name, method, target, ctx.Err())
		return
	}
	reason := "client cancelled"
	if ctx.Err() == context.DeadlineExceeded {
		reason = "client deadline exceeded"
	}
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationCancelled),
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": reason}},
	}}
	c.bg.Go(func() {
		nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelNotifyTimeout)
		defer cancel()
		err := c.mcp.GetTransport().SendNotification(nctx, n)
		if err != nil {
			c.rec.Note("%s: notifications/cancelled for request %s (%s %s) failed: %v", c.opts.name, id, method, target, err)
			return
		}
		c.rec.Note("%s: sent notifications/cancelled for request %s (%s %s): %s", c.opts.name, id, method, target, reason)
	})
}

// waitGroup waits for wg or until ctx ends.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// idSlotKey is the context key of a call's idSlot.
type idSlotKey struct{}

// idSlot holds the JSON-RPC id of the request a call sent.
type idSlot struct {
	mu    sync.Mutex
	id    json.RawMessage
	set   bool
	facts wireFacts
}

func (s *idSlot) put(id json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.set {
		s.id, s.set = id, true
	}
}

// get returns the id as mcp-go's RequestId (a number or a string).
func (s *idSlot) get() (mcp.RequestId, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.set {
		return mcp.RequestId{}, false
	}
	var id mcp.RequestId
	if err := json.Unmarshal(s.id, &id); err != nil {
		return mcp.RequestId{}, false
	}
	return id, true
}

// idCapture is an http.RoundTripper that notes the JSON-RPC id of the
// request a call POSTs in the call's idSlot (mcp-go does not expose the
// ids it assigns), and what the wire shows of the exchanges that carry
// the request or resume its stream (wireFacts).
type idCapture struct{ next http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (t idCapture) RoundTrip(req *http.Request) (*http.Response, error) {
	slot, _ := req.Context().Value(idSlotKey{}).(*idSlot)
	carries, post := false, req.Method == http.MethodPost
	if slot != nil && post && req.Body != nil && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			b, _ := io.ReadAll(io.LimitReader(body, 1<<20))
			body.Close()
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(bytes.TrimSpace(b), &msg) == nil && len(msg.ID) > 0 && string(msg.ID) != "null" {
				slot.put(msg.ID)
				carries = true
			}
		}
	}
	// A GET that resumes the call's stream (Last-Event-ID) may carry
	// the answer too.
	if slot != nil && req.Method == http.MethodGet && req.Header.Get("Last-Event-ID") != "" {
		carries = true
	}
	resp, err := t.next.RoundTrip(req)
	if carries {
		if err != nil {
			slot.roundTripFailed(err)
		} else {
			slot.watch(resp, post)
		}
	}
	return resp, err
}

// noteHandler is a slog.Handler that records mcp-go's log lines as notes
// on the client's recorder.
type noteHandler struct {
	rec    *Recorder
	client string
	attrs  []slog.Attr
}

// Enabled implements slog.Handler: info and above.
func (h *noteHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

// Handle implements slog.Handler.
func (h *noteHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "mcp-go (%s) %s: %s", h.client, r.Level, r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.rec.Note("%s", b.String())
	return nil
}

// WithAttrs implements slog.Handler.
func (h *noteHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &noteHandler{rec: h.rec, client: h.client, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

// WithGroup implements slog.Handler (groups are flattened).
func (h *noteHandler) WithGroup(string) slog.Handler { return h }
