package vmcp_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

const stdioScript = `
name: gamma
transport: stdio
protocol: legacy
tools:
  - {name: echo}
  - {name: fail}
  - {name: die}
  - {name: hang}
  - {name: oops}
  - {name: bad}
  - {name: wrongid}
  - {name: big}
  - {name: noresult}
  - {name: slow, delay: 2500ms}
  - {name: wait, delay: 1s}
faults:
  - {kind: jsonrpc_error, code: -32603, message: injected, match: {tool: fail}}
  - {kind: crash, exit: true, match: {tool: die}}
  - {kind: stall, match: {tool: hang}}
  - {kind: tool_error, text: "tool says no", match: {tool: oops}}
  - {kind: malformed, variant: invalid_json, match: {tool: bad}}
  - {kind: malformed, variant: wrong_id, match: {tool: wrongid}}
  - {kind: malformed, variant: oversized, size: 1048576, match: {tool: big}}
  - {kind: malformed, variant: no_result, match: {tool: noresult}}
`

// TestStdioBackend: a stdio backend's faults (error, stall, tool error,
// process exit, bad output, a late answer) each fail the call in flight as
// they should, naming the backend, and the next call is served (the process
// started again when it exited). Legacy and modern clients run side by
// side, each against its own gateway and so its own process: the faults of
// one must not reach the other's calls.
func TestStdioBackend(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "gamma.yaml")
	if err := os.WriteFile(script, []byte(stdioScript), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("name: t\nbackends:\n  - {name: gamma, transport: stdio, command: [%q, %q]}\ntimeouts: {initialize: 5s, call: 2s, close: 500ms}\nlimits: {maxResponseBytes: 64KiB}\n", stdioBackendBin, script)
	for _, modern := range []bool{false, true} {
		t.Run(map[bool]string{false: "legacy", true: "modern"}[modern], func(t *testing.T) {
			t.Parallel()
			stdioFaults(t, startGateway(t, cfg), modern)
		})
	}
}

// stdioFaults is TestStdioBackend for one client revision against g.
func stdioFaults(t *testing.T, g *vmcp.Gateway, modern bool) {
	c := connect(t, g.URL(), modern)
	if res, _ := callTool(t, c, "gamma_echo", map[string]any{"v": 1}); res.IsError {
		t.Fatalf("echo: %s", resultText(res))
	}
	res, d := callTool(t, c, "gamma_fail", nil)
	checkErr(t, res, "gamma", "jsonrpc_error", `backend "gamma" error: injected`)
	t.Logf("modern=%v jsonrpc_error in %v", modern, d)
	res, d = callTool(t, c, "gamma_hang", nil)
	checkErr(t, res, "gamma", "timeout", `backend "gamma" unavailable: timed out after 2s`)
	t.Logf("modern=%v stall in %v", modern, d)
	res, _ = callTool(t, c, "gamma_oops", nil)
	if b, _ := metaOf(res); !res.IsError || resultText(res) != "tool says no" || b != "<nil>" && b != "" {
		t.Errorf("tool error not passed through: %q %+v", resultText(res), res.Meta)
	}
	res, d = callTool(t, c, "gamma_die", nil)
	checkErr(t, res, "gamma", "connection_closed", `backend "gamma" unavailable: process exited`)
	t.Logf("modern=%v process exit mid-call noticed in %v", modern, d)
	if d > atOnceBound {
		t.Errorf("process exit took %v to notice", d)
	}
	// The next call starts the process again.
	res, d = callTool(t, c, "gamma_echo", nil)
	if res.IsError {
		t.Fatalf("after exit: %s", resultText(res))
	}
	t.Logf("modern=%v call after process exit (respawn) took %v", modern, d)

	// Bad output fails the calls in flight at once, naming the
	// backend; the next call starts the process again.
	for _, tc := range []struct{ tool, text string }{
		{"gamma_bad", `backend "gamma" unavailable: invalid response: malformed JSON`},
		{"gamma_wrongid", `backend "gamma" unavailable: invalid response: response id`},
		{"gamma_big", `backend "gamma" unavailable: invalid response: message larger than 65536 bytes`},
		{"gamma_noresult", `backend "gamma" unavailable: invalid response: response to request`},
	} {
		res, d := callTool(t, c, tc.tool, nil)
		t.Logf("modern=%v %s: %v %s", modern, tc.tool, d, resultText(res))
		checkErr(t, res, "gamma", "invalid_response", tc.text)
		if d > atOnceBound {
			t.Errorf("%s took %v", tc.tool, d)
		}
		if res, _ := callTool(t, c, "gamma_echo", nil); res.IsError {
			t.Errorf("after %s: %s", tc.tool, resultText(res))
		}
	}

	// A late answer (slow takes 2.5 s, the call timeout is 2 s)
	// arrives while the next call is in flight: it is dropped, and
	// the process keeps serving (no re-initialization).
	reinits := stdioReinits(t, g, c, modern)
	res, _ = callTool(t, c, "gamma_slow", nil)
	checkErr(t, res, "gamma", "timeout", `backend "gamma" unavailable: timed out after 2s`)
	if res, _ := callTool(t, c, "gamma_wait", nil); res.IsError {
		t.Errorf("call in flight when the late answer arrived: %s", resultText(res))
	}
	if res, _ := callTool(t, c, "gamma_echo", nil); res.IsError {
		t.Errorf("call after the late answer: %s", resultText(res))
	}
	if n := stdioReinits(t, g, c, modern); n != reinits {
		t.Errorf("re-initializations went from %d to %d after a late answer", reinits, n)
	}
}

// stdioReinits returns how often gamma's connection was re-initialized, in
// the client's session (legacy) or the pool (modern).
func stdioReinits(t *testing.T, g *vmcp.Gateway, c *client.Client, modern bool) int {
	t.Helper()
	if !modern {
		s, ok := g.Session(c.GetSessionId())
		if !ok {
			t.Fatal("no gateway session")
		}
		st, _ := s.BackendState("gamma")
		return st.Reinitializations
	}
	n := 0
	for _, ms := range g.Status().Pool.Backends["gamma"] {
		n += ms.Reinitializations
	}
	return n
}

const sseScript = `
name: delta
transport: sse
protocol: legacy
tools:
  - {name: echo}
`

// Serial: delta's legacy SSE session (a GET stream, then the POSTs) must
// open within the 2 s initialize timeout and answer within the 1 s call
// timeout. Beside the parallel tests (-race, a second copy of the package
// running, load average 13) it timed out at both.
func TestSSEBackend(t *testing.T) {
	b := startFake(t, sseScript)
	g := startGateway(t, gwConfig(faultTimeouts, b))
	for _, modern := range []bool{false, true} {
		c := connect(t, g.URL(), modern)
		if res, _ := callTool(t, c, "delta_echo", map[string]any{"v": 1}); res.IsError {
			t.Fatalf("echo: %s", resultText(res))
		}
		m := faults.Match{Method: "tools/call"}
		for _, tc := range []struct {
			fault faults.Fault
			kind  string
			text  string
			max   time.Duration
		}{
			{faults.Fault{Kind: faults.KindHTTPStatus, Match: m, Params: &faults.HTTPStatus{Status: 403}}, "http_status", `backend "delta" unavailable: HTTP 403 Forbidden`, atOnceBound},
			{faults.Fault{Kind: faults.KindStall, Match: m}, "timeout", `backend "delta" unavailable: timed out after 1s`, time.Second + atOnceBound},
			{faults.Fault{Kind: faults.KindCrash, Match: m, Params: &faults.Crash{Mode: faults.CrashEOF}}, "connection_closed", `backend "delta" unavailable: connection closed`, atOnceBound},
			{faults.Fault{Kind: faults.KindCrash, Match: m, Params: &faults.Crash{Mode: faults.CrashReset}}, "connection_reset", `backend "delta" unavailable: connection reset`, atOnceBound},
			{faults.Fault{Kind: faults.KindJSONRPCError, Match: m, Params: &faults.JSONRPCError{Code: -32603, Message: "kaput"}}, "jsonrpc_error", `backend "delta" error: kaput`, atOnceBound},
			{faults.Fault{Kind: faults.KindMalformed, Match: m, Params: &faults.Malformed{Variant: faults.MalformedInvalidJSON}}, "invalid_response", `backend "delta" unavailable: invalid response: malformed JSON`, atOnceBound},
			{faults.Fault{Kind: faults.KindMalformed, Match: m, Params: &faults.Malformed{Variant: faults.MalformedWrongID}}, "invalid_response", `backend "delta" unavailable: invalid response: response id`, atOnceBound},
			{faults.Fault{Kind: faults.KindMalformed, Match: m, Params: &faults.Malformed{Variant: faults.MalformedNoResult}}, "invalid_response", `backend "delta" unavailable: invalid response: response to request`, atOnceBound},
		} {
			b.SetFaults(tc.fault)
			res, d := callTool(t, c, "delta_echo", nil)
			t.Logf("modern=%v sse %s: %v %s", modern, tc.fault.Kind, d, resultText(res))
			checkErr(t, res, "delta", tc.kind, tc.text)
			if d > tc.max {
				t.Errorf("took %v", d)
			}
			b.ClearFaults()
			if res, _ := callTool(t, c, "delta_echo", nil); res.IsError {
				t.Errorf("no recovery after %s: %s", tc.fault.Kind, resultText(res))
			}
		}
		// The backend drops its SSE streams: the connection is noticed dead
		// and the next call reconnects.
		if !modern {
			s, ok := g.Session(c.GetSessionId())
			if !ok {
				t.Fatal("no gateway session")
			}
			if !vmcp.BackendConnAlive(s, "delta") {
				t.Fatal("delta's connection is not alive before the stream drop")
			}
			b.ExpireSessions()
			testwait.For(t, 5*time.Second, "the condition", func() bool { return !vmcp.BackendConnAlive(s, "delta") })
		} else {
			if vmcp.PoolConnsAlive(g, "delta") != 1 {
				t.Fatalf("pool connections to delta alive before the stream drop: %d, want 1", vmcp.PoolConnsAlive(g, "delta"))
			}
			b.ExpireSessions()
			testwait.For(t, 5*time.Second, "the condition", func() bool { return vmcp.PoolConnsAlive(g, "delta") == 0 })
		}
		res, d := callTool(t, c, "delta_echo", nil)
		t.Logf("modern=%v sse call after the stream was dropped: %v %s", modern, d, resultText(res))
		if res.IsError {
			t.Errorf("after stream drop: %s", resultText(res))
		}
	}
}

func checkErr(t *testing.T, res *mcp.CallToolResult, backend, kind, prefix string) {
	t.Helper()
	text := resultText(res)
	b, k := metaOf(res)
	if !res.IsError || !strings.HasPrefix(text, prefix) || b != backend || k != kind {
		t.Errorf("got isError=%v %q [%s %s], want %q [%s %s]", res.IsError, text, b, k, prefix, backend, kind)
	}
}

const sseLateScript = `
name: late
transport: sse
protocol: legacy
tools:
  - {name: echo}
  - {name: slow, delay: 1500ms}
  - {name: wait, delay: 800ms}
`

// TestSSELateResponse: on an SSE backend a call times out (the tool takes
// 1.5 s, the call timeout is 1 s) and its answer arrives later on the
// shared stream, while the next call is in flight. The late answer is
// dropped: the in-flight call and the next one succeed on the same
// connection, with no re-initialization.
//
// Serial: the late backend's legacy SSE session must open within the 2 s
// initialize timeout. Beside the parallel tests (-race, a second copy of
// the package running, load average 13) it timed out.
func TestSSELateResponse(t *testing.T) {
	b := startFake(t, sseLateScript)
	g := startGateway(t, gwConfig(faultTimeouts, b))
	c := connect(t, g.URL(), false)
	s, ok := g.Session(c.GetSessionId())
	if !ok {
		t.Fatal("no gateway session")
	}
	slow := make(chan *mcp.CallToolResult, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "late_slow"
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := c.CallTool(ctx, req)
		if err != nil {
			res = mcp.NewToolResultError("client error: " + err.Error())
		}
		slow <- res
	}()
	res := <-slow
	checkErr(t, res, "late", "timeout", `backend "late" unavailable: timed out after 1s`)
	// Started when slow timed out (1 s), this call is in flight (0.8 s)
	// when slow's answer arrives (1.5 s).
	res, d := callTool(t, c, "late_wait", nil)
	if res.IsError {
		t.Errorf("call in flight when the late answer arrived: %s", resultText(res))
	}
	t.Logf("in-flight call: %v", d)
	// The late answer has been sent by now: the connection still serves.
	for i := range 3 {
		if res, _ := callTool(t, c, "late_echo", map[string]any{"i": i}); res.IsError {
			t.Errorf("call %d after the late answer: %s", i, resultText(res))
		}
	}
	st, _ := s.BackendState("late")
	if st.Reinitializations != 0 || st.State != vmcp.StateConnected {
		t.Errorf("backend state %s, %d re-initializations (want connected, 0): %s", st.State, st.Reinitializations, st.LastError)
	}
}
