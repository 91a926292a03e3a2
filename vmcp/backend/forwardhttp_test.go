package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// scriptedBackend is a sessionful streamable-HTTP MCP backend whose
// answer to a tools/call is whatever answer (set by the test) writes; it
// records the last tools/call request it got.
type scriptedBackend struct {
	mu     sync.Mutex
	answer func(w http.ResponseWriter, r *http.Request, id string)
	last   *http.Request
	body   []byte
}

func (b *scriptedBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed) // no GET stream, no DELETE
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(body, &req)
	switch req.Method {
	case "initialize":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "sess-1")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"scripted","version":"1"}}}`,
			req.ID, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	case "tools/call":
		b.mu.Lock()
		b.last, b.body = r, body
		answer := b.answer
		b.mu.Unlock()
		answer(w, r, string(req.ID))
	default: // notifications
		w.WriteHeader(http.StatusAccepted)
	}
}

func (b *scriptedBackend) set(answer func(w http.ResponseWriter, r *http.Request, id string)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.answer = answer
}

func (b *scriptedBackend) request() (*http.Request, []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last, b.body
}

// jsonAnswer answers with an application/json body built from the id.
func jsonAnswer(format string) func(http.ResponseWriter, *http.Request, string) {
	return func(w http.ResponseWriter, _ *http.Request, id string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, format, id)
	}
}

// dialScripted dials backend "beta" at b over sessionful streamable HTTP,
// with a call timeout of callTimeout.
func dialScripted(t *testing.T, b *scriptedBackend, callTimeout time.Duration) *Conn {
	t.Helper()
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	c := dialScriptedAt(t, srv.URL, callTimeout)
	if c.direct == nil {
		t.Fatal("the direct client is not used for a plain http:// backend")
	}
	return c
}

// dialScriptedAt dials backend "beta" at url (a scriptedBackend's server).
func dialScriptedAt(t *testing.T, url string, callTimeout time.Duration) *Conn {
	t.Helper()
	yaml := fmt.Sprintf("backends:\n  - {name: beta, url: %q, transport: streamable-http, headers: {X-Extra: yes}}\n"+
		"timeouts: {initialize: 5s, call: %s, list: 5s, close: 1s}\nlimits: {maxResponseBytes: 4096}\n", url+"/mcp", callTimeout)
	cfg, err := config.Parse([]byte(yaml), t.Name()+".yaml")
	if err != nil {
		t.Fatal(err)
	}
	life, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	d := NewDialer(life, cfg, base, slog.New(slog.DiscardHandler), mcp.Implementation{Name: "vmcp-test", Version: "1"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, be := d.DialPinned(ctx, cfg.Backends[0], mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	if be != nil {
		t.Fatalf("dial: %v", be)
	}
	t.Cleanup(func() {
		select {
		case <-c.Close():
		case <-time.After(10 * time.Second):
			t.Error("close took over 10s")
		}
	})
	if !c.directHTTP() {
		t.Fatal("a sessionful streamable-HTTP connection does not forward directly")
	}
	return c
}

// forwardCall forwards a tools/call of echo on c as the pass-through hop
// does (inside Invoke).
func forwardCall(c *Conn, timeout time.Duration) (json.RawMessage, *Error, time.Duration) {
	var result json.RawMessage
	start := time.Now()
	be := c.Invoke(context.Background(), "tools/call", timeout, func(ctx context.Context) (err error) {
		result, err = c.Forward(ctx, "tools/call", json.RawMessage(`{"arguments":{"x":1},"name":"echo"}`))
		return err
	})
	return result, be, time.Since(start)
}

// TestForwardHTTPPlainAnswer: the direct forward sends the request as
// mcp-go's transport would (body, session, protocol and configured
// headers) and returns the plain answer's result byte for byte, without
// handing it to mcp-go.
func TestForwardHTTPPlainAnswer(t *testing.T) {
	t.Parallel()
	b := &scriptedBackend{}
	b.set(jsonAnswer(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"a \"b\" }"}]} }` + "\n"))
	c := dialScripted(t, b, 5*time.Second)
	for i := range 3 {
		before := c.handedOver.Load()
		result, be, _ := forwardCall(c, 5*time.Second)
		if be != nil {
			t.Fatalf("call %d: %v", i, be)
		}
		if want := `{"content":[{"type":"text","text":"a \"b\" }"}]}`; string(result) != want {
			t.Errorf("call %d: result %s, want %s", i, result, want)
		}
		if c.handedOver.Load() != before {
			t.Errorf("call %d: the plain answer was handed to mcp-go", i)
		}
		r, body := b.request()
		wantBody := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"arguments":{"x":1},"name":"echo"}}`, forwardIDBase+int64(i)+1)
		if string(body) != wantBody {
			t.Errorf("call %d: body %s, want %s", i, body, wantBody)
		}
		for k, want := range map[string]string{
			"Mcp-Session-Id": "sess-1", "Mcp-Protocol-Version": mcp.LATEST_LEGACY_PROTOCOL_VERSION,
			"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "X-Extra": "yes",
		} {
			if got := r.Header.Get(k); got != want {
				t.Errorf("call %d: header %s %q, want %q", i, k, got, want)
			}
		}
	}
}

// TestForwardHTTPAnswers: every answer but the plain one is handed to
// mcp-go's transport and the validators, and ends as it did before the
// direct forward: an SSE stream (with a notification first) is read, a
// wrong id, garbage, an oversized body or a result that is not an object
// is an invalid response, a 403 an HTTP status error, a stall a timeout
// at the call's deadline; each error names the backend. The connection
// serves a plain call after each.
func TestForwardHTTPAnswers(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	stall := func(w http.ResponseWriter, r *http.Request, _ string) { <-r.Context().Done() }
	cases := []struct {
		name   string
		answer func(http.ResponseWriter, *http.Request, string)
		result string // on success
		kind   ErrorKind
		cause  string // the error's text after `backend "beta" …: `
		max    time.Duration
	}{
		{name: "sse", answer: func(w http.ResponseWriter, _ *http.Request, id string) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[]}}\n\n", id)
		}, result: `{"content":[]}`},
		{name: "sse wrong id", answer: func(w http.ResponseWriter, _ *http.Request, _ string) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n")
		}, kind: KindInvalidResponse, cause: "unavailable: invalid response: response id 7 does not match request id"},
		{name: "wrong id", answer: jsonAnswer(`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}%.0s`),
			kind: KindInvalidResponse, cause: "unavailable: invalid response: response id 7 does not match request id"},
		{name: "string id", answer: jsonAnswer(`{"jsonrpc":"2.0","id":"%s","result":{"content":[]}}`),
			kind: KindInvalidResponse, cause: "unavailable: invalid response: response id"},
		{name: "garbage", answer: jsonAnswer(`{"jsonrpc":"2.0","id":%s,"result":{"content":[`),
			kind: KindInvalidResponse, cause: "unavailable: invalid response: malformed JSON"},
		{name: "not json", answer: jsonAnswer(`hello %s`),
			kind: KindInvalidResponse, cause: "unavailable: invalid response: malformed JSON"},
		{name: "oversized", answer: jsonAnswer(`{"jsonrpc":"2.0","id":%s,"result":{"pad":"` + strings.Repeat("x", 5000) + `"}}`),
			kind: KindInvalidResponse, cause: "unavailable: invalid response: response larger than 4096 bytes"},
		{name: "result not an object", answer: jsonAnswer(`{"jsonrpc":"2.0","id":%s,"result":[1]}`),
			kind: KindInvalidResponse, cause: "unavailable: invalid response: tools/call result is not a JSON object"},
		{name: "no result", answer: jsonAnswer(`{"jsonrpc":"2.0","id":%s}`),
			kind: KindInvalidResponse, cause: "unavailable: invalid response: response to request"},
		{name: "jsonrpc error", answer: jsonAnswer(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"kaput"}}`),
			kind: KindJSONRPCError, cause: "error: kaput (JSON-RPC error -32603)"},
		{name: "http 403", answer: func(w http.ResponseWriter, _ *http.Request, _ string) { http.Error(w, "go away", http.StatusForbidden) },
			kind: KindHTTPStatus, cause: "unavailable: HTTP 403 Forbidden"},
		{name: "stall", answer: stall, kind: KindTimeout, cause: "unavailable: timed out after 300ms", max: timeout + 2*time.Second},
		{name: "spelled otherwise", answer: jsonAnswer(`{"jsonrpc":"2.0","ID":%s,"Result":{"content":[]}}`), result: `{"content":[]}`},
	}
	b := &scriptedBackend{}
	c := dialScripted(t, b, timeout)
	plain := jsonAnswer(`{"jsonrpc":"2.0","id":%s,"result":{"ok":true}}`)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b.set(tc.answer)
			before := c.handedOver.Load()
			callTimeout := 10 * time.Second // generous: a loaded machine answers late
			if tc.kind == KindTimeout {
				callTimeout = timeout
			}
			result, be, d := forwardCall(c, callTimeout)
			if c.handedOver.Load() == before {
				t.Error("the answer was not handed to mcp-go")
			}
			switch {
			case tc.kind == "" && be != nil:
				t.Errorf("got %v, want result %s", be, tc.result)
			case tc.kind == "" && string(result) != tc.result:
				t.Errorf("result %s, want %s", result, tc.result)
			case tc.kind != "" && be == nil:
				t.Errorf("succeeded with %s, want kind %s", result, tc.kind)
			case tc.kind != "":
				if want := `backend "beta" ` + tc.cause; be.Kind != tc.kind || !strings.HasPrefix(be.Error(), want) {
					t.Errorf("got %q (kind %s), want kind %s, %q…", be, be.Kind, tc.kind, want)
				}
			}
			if max := cmpOr(tc.max, 2*time.Second); d > max {
				t.Errorf("answered after %v, bound %v", d, max)
			}
			b.set(plain)
			if result, be, _ := forwardCall(c, 10*time.Second); be != nil || string(result) != `{"ok":true}` {
				t.Errorf("the next plain call: %s, %v", result, be)
			}
		})
	}
}

func cmpOr(d, or time.Duration) time.Duration {
	if d == 0 {
		return or
	}
	return d
}

// TestForwardHTTPSessionExpired: a 404 ends the backend session as it did
// through mcp-go (session_expired, which the member answers by
// re-initializing), and a forward after it is not sent.
func TestForwardHTTPSessionExpired(t *testing.T) {
	t.Parallel()
	b := &scriptedBackend{}
	c := dialScripted(t, b, 5*time.Second)
	b.set(func(w http.ResponseWriter, _ *http.Request, _ string) { http.NotFound(w, nil) })
	_, be, _ := forwardCall(c, 5*time.Second)
	if be == nil || be.Kind != KindSessionExpired || !strings.HasPrefix(be.Error(), `backend "beta" unavailable: session expired`) {
		t.Fatalf("got %v, want session_expired naming beta", be)
	}
	var sent atomic.Bool
	b.set(func(w http.ResponseWriter, r *http.Request, id string) {
		sent.Store(true)
		jsonAnswer(`{"jsonrpc":"2.0","id":%s,"result":{}}`)(w, r, id)
	})
	_, be, _ = forwardCall(c, 5*time.Second)
	if be == nil || be.Kind != KindSessionExpired || !errors.Is(be, ErrUnavailable) {
		t.Errorf("after the 404: got %v, want session_expired", be)
	}
	if sent.Load() {
		t.Error("a request went out on the ended session")
	}
}
