package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
)

// TestNoResourcesNoPrompts (fixture j): with --no-resources --no-prompts
// neither capability is advertised and every resources/* and prompts/*
// request is answered -32601, while tools work; without them (the same
// backends) both are offered, so the test can fail.
func TestNoResourcesNoPrompts(t *testing.T) {
	alpha, beta := startBackend(t, "alpha", "streamable-http"), startBackend(t, "beta", "streamable-http")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	c, init := connect(t, startFixture(t, alpha, beta, "--look", "a", "--prefix-format", "{backend}__"))
	if init.Capabilities.Prompts == nil || init.Capabilities.Resources == nil {
		t.Fatalf("without the flags: capabilities %+v; want prompts and resources offered", init.Capabilities)
	}
	if _, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "beta__greet"}}); err != nil {
		t.Fatalf("without the flags: prompts/get: %v", err)
	}

	c, init = connect(t, startFixture(t, alpha, beta, "--look", "a", "--prefix-format", "{backend}__", "--no-resources", "--no-prompts"))
	if init.Capabilities.Prompts != nil || init.Capabilities.Resources != nil {
		t.Errorf("capabilities %+v; want neither prompts nor resources", init.Capabilities)
	}
	if init.Capabilities.Tools == nil {
		t.Errorf("capabilities %+v; want tools", init.Capabilities)
	}
	calls := map[string]func() error{
		"prompts/list": func() error { _, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{}); return err },
		"prompts/get": func() error {
			_, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "beta__greet"}})
			return err
		},
		"resources/list": func() error { _, err := c.ListResources(ctx, mcp.ListResourcesRequest{}); return err },
		"resources/read": func() error {
			_, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "mem://beta/readme"}})
			return err
		},
	}
	for method, call := range calls {
		if err := call(); !errors.Is(err, mcp.ErrMethodNotFound) {
			t.Errorf("%s: %v; want -32601 (method not found)", method, err)
		}
	}
	if res, err := callTool(t, c, "beta__echo"); err != nil || res.IsError {
		t.Errorf("tools/call beta__echo: %+v, %v; want a success", res, err)
	}
}

// TestRPCErrorCode (fixture k): with --rpc-error-code N a backend failure
// on tools/call is answered HTTP 200, a JSON-RPC error to the request's
// id with code N, its message naming the backend and quoting the cause
// (a reset as "connection reset by peer"); mcp-go's client returns it as
// a plain error. A backend's own isError result and a success pass
// unchanged; without the flag the reference answers an isError result.
func TestRPCErrorCode(t *testing.T) {
	reset := faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashReset}, Match: faults.Match{Tool: "echo"}}
	forbidden := faults.Fault{Kind: faults.KindHTTPStatus, Params: &faults.HTTPStatus{Status: 403}, Match: faults.Match{Method: "tools/call"}}
	own := faults.Fault{Kind: faults.KindToolError, Params: &faults.ToolError{Text: "tool says no"}, Match: faults.Match{Tool: "echo"}}
	for _, code := range []int{-32005, 0} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			alpha, beta := startBackend(t, "alpha", "streamable-http"), startBackend(t, "beta", "streamable-http")
			url := startFixture(t, alpha, beta, "--look", "a", "--prefix-format", "{backend}__", "--rpc-error-code", fmt.Sprint(code))
			raw := rawConnect(t, url)
			c, _ := connect(t, url)
			for _, tc := range []struct {
				name  string
				fault faults.Fault
				want  string // the message's cause
			}{
				{"reset", reset, "connection reset by peer"},
				{"403", forbidden, "HTTP 403 Forbidden"},
			} {
				setFaults(t, beta, tc.fault)
				resp, body := raw.post(`{"jsonrpc":"2.0","id":"call-7","method":"tools/call","params":{"name":"beta__echo","arguments":{"msg":"x"}}}`)
				a := parseAnswer(t, body)
				if resp.StatusCode != 200 || string(a.ID) != `"call-7"` || a.Error == nil || a.Error.Code != code ||
					!strings.HasPrefix(a.Error.Message, "backend beta: tool call failed: ") || !strings.Contains(a.Error.Message, tc.want) {
					t.Errorf("%s: HTTP %d, %s; want HTTP 200, a JSON-RPC error to id \"call-7\" with code %d naming beta and quoting %q", tc.name, resp.StatusCode, body, code, tc.want)
				}
				res, err := callTool(t, c, "beta__echo")
				if err == nil || !strings.Contains(err.Error(), "backend beta: tool call failed") || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s through mcp-go: %+v, %v; want an error naming beta and quoting %q", tc.name, res, err, tc.want)
				}
			}
			setFaults(t, beta, own)
			if res, err := callTool(t, c, "beta__echo"); err != nil || !res.IsError {
				t.Errorf("backend's own isError: %+v, %v; want it passed as an isError result", res, err)
			}
			beta.ClearFaults()
			if res, err := callTool(t, c, "beta__echo"); err != nil || res.IsError {
				t.Errorf("no fault: %+v, %v; want a success", res, err)
			}
		})
	}
	t.Run("without the flag", func(t *testing.T) {
		alpha, beta := startBackend(t, "alpha", "streamable-http"), startBackend(t, "beta", "streamable-http")
		c, _ := connect(t, startFixture(t, alpha, beta, "--look", "a", "--prefix-format", "{backend}__"))
		setFaults(t, beta, reset)
		if res, err := callTool(t, c, "beta__echo"); err != nil || !res.IsError {
			t.Errorf("reset: %+v, %v; want the reference's isError result", res, err)
		}
	})
}

// TestRPCErrorCodeFlag: the code must be an integer.
func TestRPCErrorCodeFlag(t *testing.T) {
	if _, err := newFixture([]string{"--rpc-error-code", "x"}); err == nil || !strings.Contains(err.Error(), "want an integer") {
		t.Errorf("--rpc-error-code x: %v; want an error asking for an integer", err)
	}
	if _, err := newFixture([]string{"--cancel-one-in", "-1"}); err == nil || !strings.Contains(err.Error(), "--cancel-one-in") {
		t.Errorf("--cancel-one-in -1: %v; want an error naming the flag", err)
	}
}

// gets counts the GET requests in b's log.
func gets(b interface {
	Requests() []fakebackends.RequestRecord
}) int {
	n := 0
	for _, r := range b.Requests() {
		if r.HTTPMethod == "GET" {
			n++
		}
	}
	return n
}

// TestNoResume (fixture m): beta answers echo with a stream that carries
// an event id and ends before the answer (a forged answer waits for the
// GET resuming it). The reference's backend client resumes: beta's log
// shows the GET. With --no-resume the GET never reaches beta and the call
// fails, naming beta.
func TestNoResume(t *testing.T) {
	resumed := faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedWrongIDResumed}, Match: faults.Match{Tool: "echo"}}
	for _, noResume := range []bool{false, true} {
		t.Run(fmt.Sprintf("no-resume=%v", noResume), func(t *testing.T) {
			alpha, beta := startBackend(t, "alpha", "streamable-http"), startBackend(t, "beta", "streamable-http")
			args := []string{"--look", "a", "--prefix-format", "{backend}__"}
			if noResume {
				args = append(args, "--no-resume")
			}
			c, _ := connect(t, startFixture(t, alpha, beta, args...))
			setFaults(t, beta, resumed)
			before := gets(beta)
			res, err := callTool(t, c, "beta__echo")
			got := gets(beta) - before
			t.Logf("%+v, %v; %d GET(s) reached beta", res, err, got)
			switch {
			case !noResume && got == 0:
				t.Errorf("the reference's backend client did not resume (no GET reached beta): this test proves nothing")
			case noResume && got != 0:
				t.Errorf("%d GET(s) reached beta; want none (never resumed)", got)
			case noResume && (err != nil || !res.IsError || !strings.Contains(fmt.Sprint(res.Content), "beta")):
				t.Errorf("%+v, %v; want an isError result naming beta", res, err)
			}
			beta.ClearFaults()
			if res, err := callTool(t, c, "beta__echo"); err != nil || res.IsError {
				t.Errorf("after the fault: %+v, %v; want a success", res, err)
			}
		})
	}
}

// pendingSlow is the set of beta's slow tools/calls still pending (held
// by a stall), keyed by arrival time and id.
func pendingSlow(b *fakebackends.Backend) map[string]bool {
	out := map[string]bool{}
	for _, r := range b.Requests() {
		if r.Method == "tools/call" && r.Tool == "slow" && r.Pending {
			out[r.Time.String()+" "+r.ID] = true
		}
	}
	return out
}

// cancelTrial starts a call of beta__slow by start (which returns once
// the call is sent), waits until it is stalled at beta, cancels it by
// cancel, and reports whether beta's call ended within 1.5 s.
func cancelTrial(t *testing.T, beta *fakebackends.Backend, start func(), cancel func()) bool {
	t.Helper()
	before := pendingSlow(beta)
	start()
	var mine string
	for deadline := time.Now().Add(5 * time.Second); mine == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for k := range pendingSlow(beta) {
			if !before[k] {
				mine = k
			}
		}
	}
	if mine == "" {
		t.Fatal("the slow call never stalled at beta")
	}
	cancel()
	for deadline := time.Now().Add(1500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !pendingSlow(beta)[mine] {
			return true
		}
	}
	return false
}

// TestCancelOneIn (fixture n): with --cancel-one-in 3 a client's
// cancellations (calls it abandons; or notifications/cancelled) end
// beta's stalled call for the 1st and the 4th of six only; the others
// run on as with --detach-calls.
func TestCancelOneIn(t *testing.T) {
	stall := faults.Fault{Kind: faults.KindStall, Params: &faults.Stall{Stage: faults.StageBeforeHeaders}, Match: faults.Match{Tool: "slow"}}
	want := []bool{true, false, false, true, false, false}
	judge := func(t *testing.T, got []bool) {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("beta's call ended after cancellation: %v; want %v (1 in 3 acted on)", got, want)
		}
	}
	t.Run("abandoned", func(t *testing.T) {
		alpha, beta := startBackend(t, "alpha", "streamable-http"), startBackend(t, "beta", "streamable-http")
		c, _ := connect(t, startFixture(t, alpha, beta, "--look", "a", "--prefix-format", "{backend}__", "--cancel-one-in", "3"))
		setFaults(t, beta, stall)
		var got []bool
		for range want {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			got = append(got, cancelTrial(t, beta, func() {
				go func() {
					defer close(done)
					req := mcp.CallToolRequest{}
					req.Params.Name = "beta__slow"
					_, _ = c.CallTool(ctx, req)
				}()
			}, cancel))
			<-done
		}
		judge(t, got)
	})
	t.Run("notified", func(t *testing.T) {
		alpha, beta := startBackend(t, "alpha", "streamable-http"), startBackend(t, "beta", "streamable-http")
		raw := rawConnect(t, startFixture(t, alpha, beta, "--look", "a", "--prefix-format", "{backend}__", "--cancel-one-in", "3"))
		setFaults(t, beta, stall)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var got []bool
		for i := range want {
			id := 100 + i
			got = append(got, cancelTrial(t, beta, func() {
				go raw.send(ctx, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"beta__slow"}}`, id))
			}, func() {
				raw.post(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"test"}}`, id))
			}))
		}
		judge(t, got)
		beta.ClearFaults()
	})
}

// TestSSENeverBackSilent (fixture o): once the SSE backend beta restarted
// (its session stream ended), --sse-never-back-silent --call-timeout 1h
// leaves every call of beta unanswered until the client gives up, while
// alpha answers; with --sse-never-back the same call fails at once.
func TestSSENeverBackSilent(t *testing.T) {
	for _, silent := range []bool{false, true} {
		t.Run(fmt.Sprintf("silent=%v", silent), func(t *testing.T) {
			alpha, beta := startBackend(t, "alpha", "streamable-http"), startBackend(t, "beta", "sse")
			flag := "--sse-never-back"
			if silent {
				flag = "--sse-never-back-silent"
			}
			c, _ := connect(t, startFixture(t, alpha, beta, "--look", "a", "--prefix-format", "{backend}__", "--call-timeout", "1h", flag))
			if res, err := callTool(t, c, "beta__echo"); err != nil || res.IsError {
				t.Fatalf("before the restart: %+v, %v; want a success", res, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := beta.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			req := mcp.CallToolRequest{}
			req.Params.Name = "beta__echo"
			req.Params.Arguments = map[string]any{"msg": "after"}
			call := func(d time.Duration) (*mcp.CallToolResult, time.Duration, error) {
				ctx, cancel := context.WithTimeout(context.Background(), d)
				defer cancel()
				start := time.Now()
				res, err := c.CallTool(ctx, req)
				return res, time.Since(start), err
			}
			// Until the back proxy has seen beta's session stream end.
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if res, _, err := call(500 * time.Millisecond); err != nil || res.IsError {
					break
				}
			}
			res, took, err := call(2 * time.Second)
			switch {
			case silent && !errors.Is(err, context.DeadlineExceeded):
				t.Errorf("after the restart: %+v, %v in %s; want no answer until the client's 2 s deadline", res, err, took)
			case !silent && (err != nil || !res.IsError || took > time.Second):
				t.Errorf("after the restart: %+v, %v in %s; want an error result at once", res, err, took)
			}
			if res, err := callTool(t, c, "alpha__echo"); err != nil || res.IsError {
				t.Errorf("alpha: %+v, %v; want a success", res, err)
			}
		})
	}
}
