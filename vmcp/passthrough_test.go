package vmcp_test

import (
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// passed asserts that fn's requests were answered on the pass-through hop.
func passed(t *testing.T, g *vmcp.Gateway, fn func()) {
	t.Helper()
	before := vmcp.PassedThrough(g)
	fn()
	if vmcp.PassedThrough(g) == before {
		t.Fatal("the request did not take the pass-through hop")
	}
}

// TestPassThroughGuarantees: on the pass-through hop, a backend answer
// with the wrong id is refused, an oversized one too, a stall ends at the
// call deadline, and every failure names the backend and its kind.
func TestPassThroughGuarantees(t *testing.T) {
	callMatch := faults.Match{Method: "tools/call", Tool: "echo"}
	cases := []struct {
		name  string
		fault faults.Fault
		kind  string
		text  string
		max   time.Duration
	}{
		{"wrong id", faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedWrongID}}, "invalid_response", `backend "beta" unavailable: invalid response`, atOnceBound},
		{"oversized", faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedOversized, Size: 1 << 20}}, "invalid_response", `backend "beta" unavailable: invalid response`, atOnceBound},
		{"http 403", faults.Fault{Kind: faults.KindHTTPStatus, Params: &faults.HTTPStatus{Status: 403}}, "http_status", `backend "beta" unavailable: HTTP 403 Forbidden`, atOnceBound},
		{"jsonrpc error", faults.Fault{Kind: faults.KindJSONRPCError, Params: &faults.JSONRPCError{Code: -32603, Message: "kaput"}}, "jsonrpc_error", `backend "beta" error: kaput`, atOnceBound},
		{"stall", faults.Fault{Kind: faults.KindStall}, "timeout", `backend "beta" unavailable: timed out after 1s`, time.Second + atOnceBound},
	}
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	g := startGateway(t, gwConfig(faultTimeouts, a, b))
	c := connect(t, g.URL(), false)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.fault.Match = callMatch
			if err := b.SetFaults(tc.fault); err != nil {
				t.Fatal(err)
			}
			defer b.ClearFaults()
			passed(t, g, func() {
				res, d := callTool(t, c, "beta_echo", nil)
				backend, kind := metaOf(res)
				text := resultText(res)
				if len(text) > 200 {
					text = text[:200] + "…"
				}
				t.Logf("%s: %q after %v", tc.name, text, d)
				if !res.IsError || backend != "beta" || kind != tc.kind || !strings.HasPrefix(text, tc.text) {
					t.Errorf("isError=%v backend=%q kind=%q text %q; want an error naming beta, kind %s, text %q…", res.IsError, backend, kind, text, tc.kind, tc.text)
				}
				if d > tc.max {
					t.Errorf("answered after %v, bound %v", d, tc.max)
				}
			})
			passed(t, g, func() { // the session recovers
				if res, _ := callTool(t, c, "beta_other", nil); res.IsError || resultText(res) != "fine" {
					t.Errorf("beta_other after the fault: %q", resultText(res))
				}
			})
		})
	}
}

// callEvents counts the observer's events per backend and op.
type callEvents struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *callEvents) ObserveCall(e vmcp.CallEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n[e.Backend+" "+e.Op]++
}

func (o *callEvents) count(key string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[key]
}

// TestPassThroughBreakerAndObserver: failures on the pass-through hop
// count for the circuit breaker (it opens, and the next call fails fast
// without reaching the backend) and reach the observer (metrics, health).
func TestPassThroughBreakerAndObserver(t *testing.T) {
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	obs := &callEvents{n: map[string]int{}}
	g := startGateway(t, gwConfig(faultTimeouts+"breaker: {failureThreshold: 2, openTimeout: 1m}\n", a, b), vmcp.WithObserver(obs))
	c := connect(t, g.URL(), false)
	if err := b.SetFaults(faults.Fault{Kind: faults.KindHTTPStatus, Params: &faults.HTTPStatus{Status: 500}, Match: faults.Match{Method: "tools/call"}}); err != nil {
		t.Fatal(err)
	}
	before := obs.count("beta tools/call")
	for i := range 2 {
		passed(t, g, func() {
			res, _ := callTool(t, c, "beta_echo", nil)
			if _, kind := metaOf(res); kind != "http_status" {
				t.Fatalf("call %d: kind %q, want http_status", i, kind)
			}
		})
	}
	sent := countTool(b.Requests(), "tools/call", "")
	passed(t, g, func() {
		res, d := callTool(t, c, "beta_echo", nil)
		if _, kind := metaOf(res); kind != "circuit_open" {
			t.Fatalf("third call: kind %q (%q) after %v, want circuit_open", kind, resultText(res), d)
		}
	})
	if n := countTool(b.Requests(), "tools/call", ""); n != sent {
		t.Errorf("the backend got %d tools/call after the circuit opened", n-sent)
	}
	if n := obs.count("beta tools/call") - before; n != 3 {
		t.Errorf("observer saw %d beta tools/call, want 3", n)
	}
}

// TestPassThroughCancel: a client's notifications/cancelled ends a
// pass-through call at once and is forwarded to the backend.
func TestPassThroughCancel(t *testing.T) {
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	g := startGateway(t, gwConfig("timeouts: {call: 10s, close: 500ms}\n", a, b))
	c := connect(t, g.URL(), false)
	if err := b.SetFaults(faults.Fault{Kind: faults.KindStall, Match: faults.Match{Method: "tools/call", Tool: "echo"}}); err != nil {
		t.Fatal(err)
	}
	session := c.GetSessionId()
	var resp map[string]any
	var took atomic.Int64
	done := make(chan struct{})
	before := vmcp.PassedThrough(g)
	go func() {
		defer close(done)
		start := time.Now()
		resp, _ = rawPost(ctxT(t, 10*time.Second), g.URL(), session, map[string]any{
			"jsonrpc": "2.0", "id": "call-7", "method": "tools/call", "params": map[string]any{"name": "beta_echo"},
		})
		took.Store(int64(time.Since(start)))
	}()
	testwait.For(t, 3*time.Second, "the call reaches beta", func() bool { return b.InFlight() > 0 })
	if _, err := rawPost(ctxT(t, 5*time.Second), g.URL(), session, map[string]any{
		"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": "call-7", "reason": "user"},
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled call did not end within 5s")
	}
	if vmcp.PassedThrough(g) == before {
		t.Fatal("the call did not take the pass-through hop")
	}
	testwait.For(t, 3*time.Second, "beta is told notifications/cancelled", func() bool { return countMethod(b, "notifications/cancelled") > 0 })
	res, _ := resp["result"].(map[string]any)
	meta, _ := res["_meta"].(map[string]any)
	t.Logf("cancelled after %v: %v", time.Duration(took.Load()), res)
	if meta["vmcp/errorKind"] != string(vmcp.KindCanceled) || meta["vmcp/backend"] != "beta" {
		t.Errorf("result %v, want an error of kind canceled naming beta", res)
	}
	if d := time.Duration(took.Load()); d > 2*time.Second {
		t.Errorf("cancelled call took %v", d)
	}
}

// TestPassThroughToolsList: the tools/list the hop answers from the
// view's cached encoding is the one mcp-go's server answers.
func TestPassThroughToolsList(t *testing.T) {
	a, b := startFake(t, alphaScript), startFake(t, betaScript)
	g := startGateway(t, gwConfig("", a, b))
	c := connect(t, g.URL(), false)
	var cached, fromMCPGo map[string]any
	passed(t, g, func() {
		var err error
		if cached, err = rawPost(ctxT(t, 5*time.Second), g.URL(), c.GetSessionId(), map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}); err != nil {
			t.Fatal(err)
		}
	})
	before := vmcp.PassedThrough(g)
	// A _meta leaves the request to mcp-go.
	fromMCPGo, err := rawPost(ctxT(t, 5*time.Second), g.URL(), c.GetSessionId(), map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": map[string]any{"_meta": map[string]any{"progressToken": 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if vmcp.PassedThrough(g) != before {
		t.Fatal("the request with _meta took the hop")
	}
	tools, _ := cached["result"].(map[string]any)["tools"].([]any)
	if len(tools) < 3 || !reflect.DeepEqual(cached, fromMCPGo) {
		t.Errorf("cached tools/list (%d tools) = %v\nmcp-go's = %v", len(tools), cached, fromMCPGo)
	}
}
