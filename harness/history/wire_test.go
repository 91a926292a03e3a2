package history

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// wireGateway is a minimal legacy MCP server whose tools/call answer is
// whatever answer writes: the shapes of answers real gateways give.
func wireGateway(t *testing.T, answer func(w http.ResponseWriter, id json.RawMessage)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &req)
		w.Header().Set("Mcp-Session-Id", "s1")
		switch req.Method {
		case "initialize":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"wire","version":"1"}}}`, req.ID)
		case "tools/call":
			answer(w, req.ID)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv.URL
}

// TestOutcomeFromTheWire: an error answer is an error whatever its code
// and words (a non-standard code quoting "connection reset by peer"
// included), with its code and HTTP status recorded; a stream or
// connection that ends before an answer to the request's id is dropped.
func TestOutcomeFromTheWire(t *testing.T) {
	rpcError := func(code int, sse bool) func(http.ResponseWriter, json.RawMessage) {
		return func(w http.ResponseWriter, id json.RawMessage) {
			msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"backend beta: read tcp 127.0.0.1:1->127.0.0.1:2: connection reset by peer"}}`, id, code)
			if sse {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, msg)
		}
	}
	cases := []struct {
		name       string
		answer     func(http.ResponseWriter, json.RawMessage)
		outcome    Outcome
		status     int
		code       *int
		unanswered string
	}{
		{"code 0 as JSON", rpcError(0, false), OutcomeBackendUnavailable, 200, ptr(0), ""},
		{"code -32005 as an event", rpcError(-32005, true), OutcomeBackendUnavailable, 200, ptr(-32005), ""},
		{"standard code", rpcError(-32603, false), OutcomeBackendUnavailable, 200, ptr(-32603), ""},
		{"HTTP 503", func(w http.ResponseWriter, _ json.RawMessage) { http.Error(w, "connection reset by peer", 503) }, OutcomeError, 503, nil, ""},
		{"stream ends without an answer", func(w http.ResponseWriter, _ json.RawMessage) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n")
		}, OutcomeDropped, 200, nil, "dropped"},
		{"answer to another id", func(w http.ResponseWriter, _ json.RawMessage) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":424242,\"result\":{\"content\":[]}}\n\n")
		}, OutcomeOK, 200, nil, ""},
		{"connection closed", func(w http.ResponseWriter, _ json.RawMessage) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}, OutcomeDropped, 0, nil, "dropped"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := NewRecorder("wire")
			c, err := Dial(ctxT(t, 10*time.Second), wireGateway(t, tc.answer), RevisionLegacy, rec, WithBackends("alpha", "beta"), WithCallTimeout(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close(ctxT(t, 5*time.Second)) })
			call := c.CallTool(ctxT(t, 10*time.Second), "beta_echo", nil)
			if call.Outcome != tc.outcome || call.HTTPStatus != tc.status || call.Unanswered != tc.unanswered || !sameCode(call.RPCCode, tc.code) {
				t.Errorf("outcome %s, status %d, code %v, unanswered %q (err %v); want %s, %d, %v, %q",
					call.Outcome, call.HTTPStatus, deref(call.RPCCode), call.Unanswered, call.Err, tc.outcome, tc.status, deref(tc.code), tc.unanswered)
			}
			if foreign := tc.name == "answer to another id"; call.ForeignAnswer != foreign {
				t.Errorf("foreign answer %v, want %v", call.ForeignAnswer, foreign)
			}
			if tc.unanswered == "" && strings.Contains(call.Error, "reset by peer") && call.Outcome == OutcomeDropped {
				t.Errorf("an answer quoting a reset was read as dropped")
			}
		})
	}
}

func ptr(n int) *int { return &n }

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func sameCode(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
