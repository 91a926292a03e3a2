package vmcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// Backends of both revisions behind the pool: "mod" speaks only the
// stateless revision (its pool connection is stateless: the stateless
// forward), "leg" only the sessionful one (its pool connection is
// sessionful: Forward).
const (
	hopModern = `
name: mod
protocol: modern
tools:
  - {name: echo}
  - {name: other, result: {text: fine}}
resources:
  - {uri: "mem://mod/readme", text: "from mod"}
prompts:
  - {name: greet, text: "Hello from mod"}
`
	hopLegacy = `
name: leg
protocol: legacy
tools:
  - {name: echo}
  - {name: other, result: {text: fine}}
resources:
  - {uri: "mem://leg/readme", text: "from leg"}
prompts:
  - {name: greet, text: "Hello from leg"}
`
)

// statelessPost sends one stateless (2026-07-28) request as mcp-go's
// client would (the revision, client info and capabilities in _meta, the
// method and name in headers), with meta merged into _meta and hdr set
// after, and returns the HTTP status and the decoded answer.
func statelessPost(ctx context.Context, url, method string, params, meta map[string]any, hdr http.Header) (int, map[string]any, error) {
	m := map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.LATEST_PROTOCOL_VERSION,
		mcp.MetaKeyClientInfo:         map[string]any{"name": "vmcp-test", "version": "1"},
		mcp.MetaKeyClientCapabilities: map[string]any{},
	}
	for k, v := range meta {
		m[k] = v
	}
	p := map[string]any{"_meta": m}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set(mcp.HeaderProtocolVersion, mcp.LATEST_PROTOCOL_VERSION)
	h.Set(mcp.HeaderMethod, method)
	for k, v := range params {
		p[k] = v
		if s, ok := v.(string); ok && (k == "name" || k == "uri") {
			h.Set(mcp.HeaderName, s)
		}
	}
	for k, v := range hdr {
		h[k] = v
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 77, "method": method, "params": p})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("%s: %s", resp.Status, data)
	}
	return resp.StatusCode, out, nil
}

// hopAndMcpGo sends the same stateless request twice, on the modern hop
// and with it off (mcp-go's server and client), and returns both answers
// with their HTTP statuses. want says whether the hop must take it.
func hopAndMcpGo(t *testing.T, g *vmcp.Gateway, want bool, method string, params, meta map[string]any, hdr http.Header) (hop, ref map[string]any) {
	t.Helper()
	send := func(on bool) map[string]any {
		vmcp.SetModernHop(g, on)
		defer vmcp.SetModernHop(g, true)
		before := vmcp.PassedThrough(g)
		status, out, err := statelessPost(ctxT(t, 10*time.Second), g.URL(), method, params, meta, hdr)
		if err != nil {
			t.Fatalf("%s %v (hop %v): %v", method, params, on, err)
		}
		if took := vmcp.PassedThrough(g) > before; took != (on && want) {
			t.Fatalf("%s %v (hop %v): took the hop: %v", method, params, on, took)
		}
		out["httpStatus"] = status
		return out
	}
	return send(true), send(false)
}

// requestIDs matches the request id an error text names: the gateway's
// own id for the backend request, which differs between the hop and
// mcp-go's client.
var requestIDs = regexp.MustCompile(`request id [0-9]+`)

// sameAnswer fails unless the hop's answer is mcp-go's (but for the
// gateway's backend request id in an error text).
func sameAnswer(t *testing.T, what string, hop, ref map[string]any) {
	t.Helper()
	h, _ := json.Marshal(hop)
	r, _ := json.Marshal(ref)
	if hs, rs := requestIDs.ReplaceAllString(string(h), "request id N"), requestIDs.ReplaceAllString(string(r), "request id N"); hs != rs {
		t.Errorf("%s:\n  hop:    %s\n  mcp-go: %s", what, h, r)
	}
}

// TestModernHopAnswersAsMcpGo: a stateless client's tools/call,
// resources/read and prompts/get take the hop, on a stateless backend
// connection and on a sessionful one, and the answers (results, the
// metadata the 2026-07-28 revision adds, errors with their data, the HTTP
// status) are those mcp-go's path gives for the same request; requests
// the hop must not serve (a name the view does not route, a mismatched
// Mcp-Name header, a tool the view lacks) get mcp-go's own answer.
func TestModernHopAnswersAsMcpGo(t *testing.T) {
	mod, leg := startFake(t, hopModern), startFake(t, hopLegacy)
	g := startGateway(t, gwConfig(faultTimeouts, mod, leg))
	connect(t, g.URL(), true) // opens the pool
	same := func(what string, hop, ref map[string]any) {
		t.Helper()
		sameAnswer(t, what, hop, ref)
	}
	for _, fb := range []*fakebackends.Backend{mod, leg} {
		n := fb.Script().Name
		cases := []struct {
			method string
			params map[string]any
			meta   map[string]any
		}{
			{"tools/call", map[string]any{"name": n + "_echo", "arguments": map[string]any{"msg": "hi", "n": 2}}, nil},
			{"tools/call", map[string]any{"name": n + "_other"}, map[string]any{"progressToken": "tok-1"}},
			{"resources/read", map[string]any{"uri": "mem://" + n + "/readme"}, nil},
			{"prompts/get", map[string]any{"name": n + "_greet", "arguments": map[string]any{"who": "x"}}, nil},
		}
		for _, tc := range cases {
			hop, ref := hopAndMcpGo(t, g, true, tc.method, tc.params, tc.meta, nil)
			same(n+" "+tc.method, hop, ref)
			if hop["result"] == nil {
				t.Errorf("%s %s: no result: %v", n, tc.method, hop)
			}
		}
		// The backend took every request in its own revision.
		for _, r := range fb.Requests() {
			if want := map[string]string{"mod": "modern", "leg": "legacy"}[n]; r.Method == "tools/call" && r.Protocol != want {
				t.Errorf("%s: a tools/call arrived as %q, want %q", n, r.Protocol, want)
			}
		}
		// Failures: a tools/call is an isError result naming the backend, a
		// resources/read or prompts/get a JSON-RPC error with data.
		if err := fb.SetFaults(faults.Fault{Kind: faults.KindHTTPStatus, Params: &faults.HTTPStatus{Status: 403}}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range cases[:1] {
			hop, ref := hopAndMcpGo(t, g, true, tc.method, tc.params, nil, nil)
			same(n+" "+tc.method+" (HTTP 403)", hop, ref)
		}
		for _, tc := range cases[2:] {
			hop, ref := hopAndMcpGo(t, g, true, tc.method, tc.params, nil, nil)
			same(n+" "+tc.method+" (HTTP 403)", hop, ref)
			e, _ := hop["error"].(map[string]any)
			if data, _ := e["data"].(map[string]any); data["backend"] != n || data["kind"] != "http_status" {
				t.Errorf("%s %s (HTTP 403): error %v, want data naming %s", n, tc.method, e, n)
			}
		}
		fb.ClearFaults()
	}
	// Left to mcp-go, which answers as it does without the hop.
	for _, tc := range []struct {
		what   string
		method string
		params map[string]any
		hdr    http.Header
	}{
		{"unknown tool", "tools/call", map[string]any{"name": "nope_echo"}, nil},
		{"unknown resource", "resources/read", map[string]any{"uri": "mem://nope"}, nil},
		{"unknown prompt", "prompts/get", map[string]any{"name": "nope"}, nil},
		{"Mcp-Name mismatch", "tools/call", map[string]any{"name": "mod_echo"}, http.Header{"Mcp-Name": {"leg_echo"}}},
		{"Mcp-Method mismatch", "tools/call", map[string]any{"name": "mod_echo"}, http.Header{"Mcp-Method": {"prompts/get"}}},
		{"protocol header mismatch", "tools/call", map[string]any{"name": "mod_echo"}, http.Header{"Mcp-Protocol-Version": {mcp.LATEST_LEGACY_PROTOCOL_VERSION}}},
		{"Last-Event-ID", "tools/call", map[string]any{"name": "mod_echo"}, http.Header{"Last-Event-Id": {"x"}}},
	} {
		hop, ref := hopAndMcpGo(t, g, false, tc.method, tc.params, nil, tc.hdr)
		same(tc.what, hop, ref)
	}
}

// TestModernHopGuarantees: on the modern hop, for a backend behind a
// stateless connection and one behind a sessionful one, a forged answer
// (another request's id), an oversized one, garbage, an HTTP error, a
// JSON-RPC error, a reset and a stall each come back as an isError result
// naming the backend and the kind of failure, the stall at the call
// deadline; the backend's next call works.
func TestModernHopGuarantees(t *testing.T) {
	cases := []struct {
		name  string
		fault faults.Fault
		kind  string
		text  string
		max   time.Duration
	}{
		{"wrong id", faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedWrongID}}, "invalid_response", "unavailable: invalid response", atOnceBound},
		{"wrong id event", faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedWrongIDEvent}}, "invalid_response", "unavailable: invalid response", atOnceBound},
		{"oversized", faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedOversized, Size: 1 << 20}}, "invalid_response", "unavailable: invalid response", atOnceBound},
		{"malformed json", faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedInvalidJSON}}, "invalid_response", "unavailable: invalid response", atOnceBound},
		{"http 403", faults.Fault{Kind: faults.KindHTTPStatus, Params: &faults.HTTPStatus{Status: 403}}, "http_status", "unavailable: HTTP 403 Forbidden", atOnceBound},
		{"jsonrpc error", faults.Fault{Kind: faults.KindJSONRPCError, Params: &faults.JSONRPCError{Code: -32603, Message: "kaput"}}, "jsonrpc_error", "error: kaput", atOnceBound},
		{"crash reset", faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashReset}}, "connection_reset", "unavailable: connection reset", atOnceBound},
		{"stall", faults.Fault{Kind: faults.KindStall}, "timeout", "unavailable: timed out after 1s", time.Second + atOnceBound},
	}
	mod, leg := startFake(t, hopModern), startFake(t, hopLegacy)
	g := startGateway(t, gwConfig(faultTimeouts, mod, leg))
	c := connect(t, g.URL(), true)
	for _, fb := range []*fakebackends.Backend{mod, leg} {
		n := fb.Script().Name
		for _, tc := range cases {
			t.Run(n+"/"+tc.name, func(t *testing.T) {
				tc.fault.Match = faults.Match{Method: "tools/call", Tool: "echo"}
				if err := fb.SetFaults(tc.fault); err != nil {
					t.Fatal(err)
				}
				defer fb.ClearFaults()
				passed(t, g, func() {
					res, d := callTool(t, c, n+"_echo", map[string]any{"msg": "x"})
					t.Logf("%s: %q after %v", tc.name, resultText(res), d)
					checkErr(t, res, n, tc.kind, `backend "`+n+`" `+tc.text)
					if strings.Contains(resultText(res), faults.ForgedText) {
						t.Errorf("the forged answer reached the client: %q", resultText(res))
					}
					if d > tc.max {
						t.Errorf("answered after %v, bound %v", d, tc.max)
					}
				})
				passed(t, g, func() {
					if res, _ := callTool(t, c, n+"_other", nil); res.IsError || resultText(res) != "fine" {
						t.Errorf("%s_other after the fault: %q", n, resultText(res))
					}
				})
			})
		}
	}
}

// TestModernHopForgedAnswers: the forging backend (an mcp-go server whose
// tools/call answers come in odd shapes, with another request's id when
// forged) behind the pool: a stateless client on the hop never gets the
// forged answer, and gets what mcp-go's path gives for every shape.
func TestModernHopForgedAnswers(t *testing.T) {
	for _, mode := range []string{"event-name", "method-case", "json-method"} {
		for _, forge := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/forged=%v", mode, forge), func(t *testing.T) {
				b := forgingBackend(t, mode, forge)
				g := startGateway(t, fmt.Sprintf("name: test\nbackends:\n  - {name: beta, url: %q, transport: streamable-http}\ntimeouts: {call: 10s}\n", b.URL+"/mcp"))
				connect(t, g.URL(), true)
				hop, ref := hopAndMcpGo(t, g, true, "tools/call", map[string]any{"name": "beta_echo"}, nil, nil)
				res, _ := hop["result"].(map[string]any)
				text, _ := json.Marshal(res["content"])
				meta, _ := res["_meta"].(map[string]any)
				if forge {
					if res["isError"] != true || meta["vmcp/backend"] != "beta" || meta["vmcp/errorKind"] != "invalid_response" || strings.Contains(string(text), "forged answer") {
						t.Errorf("forged answer: %v; want an invalid_response error naming beta, never the forged result", hop)
					}
				} else if res["isError"] == true || !strings.Contains(string(text), "forged answer") {
					t.Errorf("right id: %v; want the backend's answer", hop)
				}
				sameAnswer(t, mode, hop, ref)
			})
		}
	}
}

// TestModernHopCancel: a stateless client that gives up (its HTTP
// request ends) on the hop ends the backend request at once: the
// sessionful backend is sent notifications/cancelled, the stateless one
// sees its request end (the 2026-07-28 revision's cancellation); the
// call counts as no failure, and the next call works.
func TestModernHopCancel(t *testing.T) {
	mod, leg := startFake(t, hopModern), startFake(t, hopLegacy)
	g := startGateway(t, gwConfig("timeouts: {call: 10s, close: 500ms}\n", mod, leg))
	c := connect(t, g.URL(), true)
	for _, fb := range []*fakebackends.Backend{mod, leg} {
		n := fb.Script().Name
		if err := fb.SetFaults(faults.Fault{Kind: faults.KindStall, Match: faults.Match{Method: "tools/call", Tool: "echo"}}); err != nil {
			t.Fatal(err)
		}
		before := countMethod(fb, "notifications/cancelled")
		passed(t, g, func() {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				req := mcp.CallToolRequest{}
				req.Params.Name = n + "_echo"
				_, err := c.CallTool(ctx, req)
				done <- err
			}()
			testwait.For(t, 5*time.Second, n+"'s stalled call to arrive", func() bool { return fb.InFlight() > 0 })
			cancel()
			select {
			case err := <-done:
				if err == nil {
					t.Errorf("%s: the cancelled call succeeded", n)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: the cancelled call did not return", n)
			}
			// The backend's request ends well before the 10 s call timeout.
			testwait.For(t, 3*time.Second, n+"'s request to end", func() bool { return fb.InFlight() == 0 })
			if n == "leg" {
				testwait.For(t, 3*time.Second, "notifications/cancelled at leg", func() bool { return countMethod(fb, "notifications/cancelled") > before })
			}
			t.Logf("%s: the backend's request ended %v after the call started", n, time.Since(start))
		})
		fb.ClearFaults()
		for _, ms := range g.Status().Pool.Backends[n] {
			if ms.State == vmcp.StateError {
				t.Errorf("%s: a client's cancel counted as a failure: %+v", n, ms)
			}
		}
		passed(t, g, func() {
			if res, _ := callTool(t, c, n+"_echo", map[string]any{"msg": "again"}); res.IsError {
				t.Errorf("%s after the cancel: %s", n, resultText(res))
			}
		})
	}
}

// answeringBackend is an mcp-go server (stateless revision negotiated by
// the pool) whose tools/call answers are result, as JSON, under the
// request's id.
func answeringBackend(t *testing.T, result string) *httptest.Server {
	t.Helper()
	s := server.NewMCPServer("answerer", "1")
	s.AddTool(mcp.NewTool("echo"), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("from the tool"), nil
	})
	h := server.NewStreamableHTTPServer(s)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		if r.Method != http.MethodPost || msg.Method != "tools/call" {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestModernHopResultShapes: results a backend may give that mcp-go's
// path does not pass as they are: one asking for input (the gateway's
// client cannot give any: the call fails naming the backend, as a
// transport error, on the hop as on mcp-go's path), one without
// resultType or serverInfo (added as mcp-go's server adds them), and an
// isError result of the backend's own (passed through).
func TestModernHopResultShapes(t *testing.T) {
	for _, tc := range []struct{ name, result string }{
		{"input required", `{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"who?","requestedSchema":{"type":"object","properties":{}}}}},"requestState":"s1"}`},
		{"undecorated", `{"content":[{"type":"text","text":"plain"}]}`},
		{"own isError", `{"content":[{"type":"text","text":"tool says no"}],"isError":true,"resultType":"complete"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := answeringBackend(t, tc.result)
			g := startGateway(t, fmt.Sprintf("name: test\nbackends:\n  - {name: beta, url: %q, transport: streamable-http}\ntimeouts: {call: 10s}\n", b.URL+"/mcp"))
			connect(t, g.URL(), true)
			hop, ref := hopAndMcpGo(t, g, true, "tools/call", map[string]any{"name": "beta_echo"}, nil, nil)
			res, _ := hop["result"].(map[string]any)
			meta, _ := res["_meta"].(map[string]any)
			refMeta, _ := ref["result"].(map[string]any)["_meta"].(map[string]any)
			t.Logf("hop: %v", hop)
			switch tc.name {
			case "input required":
				// mcp-go's client words its error otherwise: the kind and
				// the backend are what must agree.
				if res["isError"] != true || meta["vmcp/backend"] != "beta" || meta["vmcp/errorKind"] != "transport_error" ||
					refMeta["vmcp/backend"] != "beta" || refMeta["vmcp/errorKind"] != "transport_error" {
					t.Errorf("input required: hop %v, mcp-go %v; want a transport_error naming beta from both", hop, ref)
				}
			default:
				sameAnswer(t, tc.name, hop, ref)
				if res["resultType"] != "complete" {
					t.Errorf("%s: resultType %v", tc.name, res["resultType"])
				}
			}
		})
	}
}
