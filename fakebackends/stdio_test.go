package fakebackends

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// stdioPair runs ServeStdio on pipes and returns an initialized client, a
// function that waits (bounded) for ServeStdio's result, and the control
// API's URL.
func stdioPair(t *testing.T, s *Script) (*client.Client, func() error, string) {
	t.Helper()
	toServerR, toServerW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	ready := make(chan string, 1)
	go func() {
		err := ServeStdio(ctx, s, toServerR, toClientW, WithOnReady(func(adminURL string) { ready <- adminURL }))
		_ = toClientW.Close()
		result <- err
	}()
	c := client.NewClient(transport.NewIO(toClientR, toServerW, io.NopCloser(strings.NewReader(""))))
	var got error
	received := false
	wait := func() error {
		if received {
			return got
		}
		select {
		case got = <-result:
			received = true
		case <-time.After(5 * time.Second):
			t.Error("ServeStdio did not return within 5s")
		}
		return got
	}
	t.Cleanup(func() {
		_ = toServerW.Close()
		cancel()
		closeClient(c)
		wait()
	})
	ictx, icancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer icancel()
	if err := c.Start(ictx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ictx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION}}); err != nil {
		t.Fatal(err)
	}
	var adminURL string
	select {
	case adminURL = <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("ServeStdio did not report its control API")
	}
	if !strings.HasPrefix(adminURL, "http://127.0.0.1:") {
		t.Fatalf("stdio control API URL %q; want the default loopback address", adminURL)
	}
	return c, wait, adminURL
}

// stdioAdmin sends one control API request and returns status and body.
func stdioAdmin(t *testing.T, adminURL, method, path string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, adminURL+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// stdioRecords returns the stdio backend's request log.
func stdioRecords(t *testing.T, adminURL string) []RequestRecord {
	t.Helper()
	code, body := stdioAdmin(t, adminURL, http.MethodGet, "/requests")
	var log struct{ Requests []RequestRecord }
	if err := json.Unmarshal(body, &log); code != 200 || err != nil {
		t.Fatalf("GET /requests: %d %s (%v)", code, body, err)
	}
	return log.Requests
}

func TestStdioServesAndInjectsFaults(t *testing.T) {
	t.Parallel()
	s := testScript(t, TransportStdio, ProtocolLegacy,
		Fault{Kind: faults.KindJSONRPCError, Match: Match{Tool: "echo"}, Count: 1, Params: &faults.JSONRPCError{Code: -32001, Message: "stdio exploded"}},
		Fault{Kind: faults.KindToolError, Match: Match{Tool: "greet"}, Count: 1, Params: &faults.ToolError{Text: "bad greet"}},
	)
	c, _, _ := stdioPair(t, s)
	if _, err, _ := call(c, "echo", map[string]any{"msg": "x"}, 5*time.Second); err == nil || !strings.Contains(err.Error(), "stdio exploded") {
		t.Fatalf("jsonrpc_error over stdio: %v", err)
	}
	if res, err, _ := call(c, "echo", map[string]any{"msg": "x"}, 5*time.Second); err != nil || resultText(res) != `{"msg":"x"}` {
		t.Fatalf("echo after count 1: %q, %v", resultText(res), err)
	}
	if res, err, _ := call(c, "greet", nil, 5*time.Second); err != nil || !res.IsError || resultText(res) != "bad greet" {
		t.Fatalf("tool_error over stdio: %+v, %v", res, err)
	}
}

func TestStdioCrashEndsBackend(t *testing.T) {
	t.Parallel()
	s := testScript(t, TransportStdio, ProtocolLegacy, Fault{Kind: faults.KindCrash, Match: Match{Tool: "echo"}})
	c, wait, _ := stdioPair(t, s)
	_, err, took := call(c, "echo", nil, 5*time.Second)
	if err == nil {
		t.Fatalf("call to crashed stdio backend succeeded after %s", took)
	}
	atOnce(t, "call to crashed stdio backend", err, took)
	if err := wait(); !errors.Is(err, ErrCrashed) {
		t.Fatalf("ServeStdio returned %v, want ErrCrashed", err)
	}
}

func TestStdioStallHoldsUntilDeadlineOrClear(t *testing.T) {
	t.Parallel()
	s := testScript(t, TransportStdio, ProtocolLegacy, Fault{Kind: faults.KindStall, Match: Match{Tool: "slow"}})
	c, _, admin := stdioPair(t, s)
	_, err, took := call(c, "slow", nil, 300*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || took < 300*time.Millisecond {
		t.Fatalf("stall over stdio ended after %s: %v; want it held to the 300ms deadline", took, err)
	}
	if res, err, _ := call(c, "greet", nil, 5*time.Second); err != nil || resultText(res) != "hello" {
		t.Fatalf("other tools during a stall: %v", err)
	}
	// The client gave up, but over stdio the backend cannot tell: the line
	// is still held: logged as pending until it is done.
	slow := func(pending bool) func() bool {
		return func() bool {
			for _, r := range stdioRecords(t, admin) {
				if r.Tool == "slow" && r.Pending == pending {
					return true
				}
			}
			return false
		}
	}
	slowDone := slow(false)
	if slowDone() {
		t.Fatal("the stalled line was logged as done before the clear")
	}
	if !slow(true)() {
		t.Fatal("the stalled line is not in the log as pending")
	}
	// Clearing the faults through the control API releases it: the line is
	// served (its answer goes to an id the client gave up on) and logged.
	if code, body := stdioAdmin(t, admin, http.MethodDelete, "/faults"); code != 200 {
		t.Fatalf("DELETE /faults: %d %s", code, body)
	}
	testwait.For(t, 5*time.Second, "the released line in the request log", slowDone)
	if res, err, _ := call(c, "slow", nil, 5*time.Second); err != nil || resultText(res) != "done" {
		t.Fatalf("slow after the clear: %q, %v", resultText(res), err)
	}
}
