package targets_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// viewFixedGateway is a minimal MCP gateway (streamable HTTP, JSON
// answers) whose sessions keep the view they opened with: its first
// session lists alpha's tool only (beta's initialize "failed" then), every
// later one lists both.
func viewFixedGateway(t *testing.T) (url string, sessions *atomic.Int64) {
	sessions = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var result any
		switch req.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", fmt.Sprint(sessions.Add(1)))
			result = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "view-fixed", "version": "1"}}
		case "tools/list":
			tool := func(name string) map[string]any {
				return map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}}
			}
			tools := []any{tool("alpha_echo")}
			if r.Header.Get("Mcp-Session-Id") != "1" {
				tools = append(tools, tool("beta_echo"))
			}
			result = map[string]any{"tools": tools}
		default:
			w.WriteHeader(http.StatusAccepted) // notifications
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", sessions
}

// TestWaitToolsOpensAFreshSession: a gateway may fix a session's view when
// it opens; the readiness wait must not ask that one session for ever: a
// new session shows the backend that came later.
func TestWaitToolsOpensAFreshSession(t *testing.T) {
	t.Parallel()
	url, sessions := viewFixedGateway(t)
	if err := waitEchoTools(url); err != nil {
		t.Fatalf("waitTools: %v (%d sessions opened)", err, sessions.Load())
	}
	if n := sessions.Load(); n < 2 {
		t.Fatalf("ready after %d session(s): want the second's view", n)
	}
}

// TestSeenSaysWhatWasListed: a readiness failure says what tools/list
// showed of each backend before any guess; a gateway that listed none of
// them gets no guess about colliding names.
func TestSeenSaysWhatWasListed(t *testing.T) {
	t.Parallel()
	backends := []runtimes.BackendInfo{{Name: "alpha", Tools: []string{"echo"}}, {Name: "beta", Tools: []string{"echo"}}}
	none := []mcp.Tool{{Name: "find_tool"}, {Name: "call_tool"}}
	ms := targets.MatchTools(none, backends, "")
	if got, want := targets.Seen(none, ms), "the gateway listed 0 tools of alpha and beta (2 tools in all, none with an origin marker)"; got != want {
		t.Errorf("Seen:\n got %q\nwant %q", got, want)
	}
	if c := targets.Collisions(targets.MissingTools(ms), backends); c != "" {
		t.Errorf("no tool listed, yet a collision guess: %q", c)
	}
	some := []mcp.Tool{{Name: "alpha_echo", Description: history.OriginMarker("alpha", "echo")}, {Name: "other"}}
	ms = targets.MatchTools(some, backends, "")
	if got, want := targets.Seen(some, ms), "the gateway listed 1 of alpha's 1 and 0 of beta's 1 (2 tools in all, 1 with an origin marker)"; got != want {
		t.Errorf("Seen:\n got %q\nwant %q", got, want)
	}
	if c := targets.Collisions(targets.MissingTools(ms), backends); !strings.Contains(c, "echo (alpha, beta)") {
		t.Errorf("alpha's echo listed, beta's missing: want the collision named, got %q", c)
	}
}

// legacyRefusingGateway is an mcp-go server listing alpha_echo and
// beta_echo that refuses every 2025-11-25 client's initialize with
// -32022, as a gateway with its optimizer on refuses one revision.
func legacyRefusingGateway(t *testing.T) (url string, refused *atomic.Int64) {
	refused = new(atomic.Int64)
	s := server.NewMCPServer("legacy-refusing", "1", server.WithToolCapabilities(false))
	for _, name := range []string{"alpha_echo", "beta_echo"} {
		s.AddTool(mcp.NewTool(name), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	}
	h := server.NewStreamableHTTPServer(s)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			r.Body = io.NopCloser(bytes.NewReader(body))
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					ProtocolVersion string `json:"protocolVersion"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &req) == nil && req.Method == "initialize" && req.Params.ProtocolVersion == mcp.LATEST_LEGACY_PROTOCOL_VERSION {
				refused.Add(1)
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID,
					"error": map[string]any{"code": -32022, "message": "unsupported protocol version"}})
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", refused
}

// TestWaitToolsAsksAnotherRevision: a gateway that refuses the 2025-11-25
// revision is still found ready when a client of another revision sees
// every backend's tools (readiness is about the tools; the revisions
// scenarios judge the refusal).
func TestWaitToolsAsksAnotherRevision(t *testing.T) {
	t.Parallel()
	url, refused := legacyRefusingGateway(t)
	if err := waitEchoTools(url); err != nil {
		t.Fatalf("waitTools: %v", err)
	}
	if refused.Load() == 0 {
		t.Fatal("the gateway refused no 2025-11-25 client: the test proves nothing")
	}
}

// waitEchoTools waits, at most 20 s, until the gateway at url lists
// alpha_echo and beta_echo.
func waitEchoTools(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	backends := []runtimes.BackendInfo{{Name: "alpha", Tools: []string{"echo"}}, {Name: "beta", Tools: []string{"echo"}}}
	return targets.WaitTools(ctx, url, nil, backends, "{backend}_{tool}", false)
}
