package vmcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"
)

// forgingBackend is a streamable-HTTP backend, hand-written around an
// mcp-go server, whose tools/call answers come over SSE in the shape given
// by mode; everything else (initialize, tools/list, …) is mcp-go's.
//
//   - "event-name": an event "ping" with non-JSON data, then one named
//     "foo" carrying the answer, with the id forged (424242) when forge is
//     set.
//   - "method-case": one unnamed event carrying the answer with an extra
//     key "Method" (found by FuzzSSEValidator).
//   - "json-method": an application/json answer with an extra key
//     "method" (found by FuzzJSONAnswer).
//   - "resume": the POST's stream primes the client with an event id and
//     ends; the answer (forged id when forge is set) comes on the resumed
//     GET carrying Last-Event-ID, as SEP-1699 allows before 2026-07-28.
func forgingBackend(t *testing.T, mode string, forge bool) *httptest.Server {
	t.Helper()
	s := server.NewMCPServer("forger", "1")
	s.AddTool(mcp.NewTool("echo"), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("from the tool"), nil
	})
	mcpHandler := server.NewStreamableHTTPServer(s)
	var mu sync.Mutex
	pending := map[string]json.RawMessage{} // event id → the request id it answers
	answer := func(id json.RawMessage) string {
		if forge {
			id = json.RawMessage("424242")
		}
		return `{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"forged answer"}]}}`
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
			mu.Lock()
			id, ok := pending[r.Header.Get("Last-Event-ID")]
			mu.Unlock()
			if !ok {
				http.Error(w, "unknown event id", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", answer(id))
			return
		}
		if r.Method != http.MethodPost {
			mcpHandler.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method != "tools/call" {
			r.Body = io.NopCloser(bytes.NewReader(body))
			mcpHandler.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		switch mode {
		case "event-name":
			// An event mcp-go skips (its data is no JSON-RPC message), then
			// the answer under a name mcp-go ignores too, but dispatches.
			fmt.Fprintf(w, "event: ping\ndata: hello\n\nevent: foo\ndata: %s\n\n", answer(msg.ID))
		case "method-case":
			// The answer with a key "Method": encoding/json would match it
			// to a method field, mcp-go takes the message as the answer.
			fmt.Fprintf(w, "data: %s\n\n", strings.Replace(answer(msg.ID), `"id":`, `"Method":"x","id":`, 1))
		case "json-method":
			// A plain JSON answer that also has a method: mcp-go takes any
			// JSON body with an id as the answer.
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, strings.Replace(answer(msg.ID), `"id":`, `"method":"x","id":`, 1))
		case "resume":
			ev := fmt.Sprintf("ev-%s", msg.ID)
			mu.Lock()
			pending[ev] = msg.ID
			mu.Unlock()
			fmt.Fprintf(w, "id: %s\nretry: 10\ndata: \n\n", ev)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestForgedAnswers: a backend answer whose id is another request's never
// reaches the client, whatever the SSE event name, and also when it comes on
// a resumed stream; the same answers with the right id do (issue 12 item 1).
func TestForgedAnswers(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"event-name", "resume", "method-case", "json-method"} {
		for _, forge := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/forged=%v", mode, forge), func(t *testing.T) {
				b := forgingBackend(t, mode, forge)
				g := startGateway(t, fmt.Sprintf("name: test\nbackends:\n  - {name: beta, url: %q, transport: streamable-http}\ntimeouts: {call: 10s}\n", b.URL+"/mcp"))
				c := connect(t, g.URL(), false)
				res, d := callTool(t, c, "beta_echo", nil)
				text := resultText(res)
				backend, kind := metaOf(res)
				if forge {
					if !res.IsError || kind != "invalid_response" || backend != "beta" || strings.Contains(text, "forged answer") {
						t.Fatalf("forged answer: isError=%v backend=%q kind=%q text %q after %v; want an invalid_response error naming beta, never the forged result", res.IsError, backend, kind, text, d)
					}
					if !strings.Contains(text, "424242") {
						t.Errorf("error %q does not name the forged id 424242", text)
					}
					return
				}
				if res.IsError || text != "forged answer" {
					t.Fatalf("right id: isError=%v kind=%q text %q after %v; want the backend's answer", res.IsError, kind, text, d)
				}
			})
		}
	}
}

// TestForgedAnswersFromFakeBackend: the same attacks from the fake
// backends' malformed variants wrong_id_event and wrong_id_resumed (what a
// scenario holds any gateway to): for clients of both revisions, the call
// fails as beta being unavailable (invalid response), the forged text
// never reaches the client, and beta's other tools still work.
func TestForgedAnswersFromFakeBackend(t *testing.T) {
	t.Parallel()
	for _, variant := range []string{faults.MalformedWrongIDEvent, faults.MalformedWrongIDResumed} {
		t.Run(variant, func(t *testing.T) {
			b := startFake(t, "name: beta\nprotocol: legacy\ntools:\n  - {name: echo}\n  - {name: other, result: {text: fine}}\n")
			if err := b.SetFaults(faults.Fault{Kind: faults.KindMalformed, Match: faults.Match{Method: "tools/call", Tool: "echo"}, Params: &faults.Malformed{Variant: variant}}); err != nil {
				t.Fatal(err)
			}
			g := startGateway(t, gwConfig("timeouts: {call: 10s}\n", b))
			for _, rev := range revisions {
				c := connect(t, g.URL(), rev.modern)
				res, d := callTool(t, c, "beta_echo", map[string]any{"msg": "x"})
				backend, kind := metaOf(res)
				if !res.IsError || backend != "beta" || kind != "invalid_response" || strings.Contains(resultText(res), faults.ForgedText) {
					t.Errorf("%s: %s: isError=%v _meta %s/%s text %q after %v; want beta unavailable (invalid response), never the forged answer",
						rev.name, variant, res.IsError, backend, kind, resultText(res), d)
				}
				if res, _ := callTool(t, c, "beta_other", nil); res.IsError || resultText(res) != "fine" {
					t.Errorf("%s: beta_other after the forged answer: %q", rev.name, resultText(res))
				}
			}
			if variant == faults.MalformedWrongIDResumed {
				// The gateway did resume (so the resumed stream was
				// checked). The fake logs a request when its handler
				// returns: wait for it, bounded.
				testwait.For(t, 10*time.Second, "the gateway's resuming GET in beta's request log", func() bool {
					for _, r := range b.Requests() {
						if r.HTTPMethod == http.MethodGet && strings.Contains(r.Fault, variant) {
							return true
						}
					}
					return false
				})

			}
		})
	}
}
