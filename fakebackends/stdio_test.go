package fakebackends

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// stdioPair runs ServeStdio on pipes and returns an initialized client and
// the channel ServeStdio's result arrives on.
func stdioPair(t *testing.T, s *Script) (*client.Client, func() error) {
	t.Helper()
	toServerR, toServerW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() {
		err := ServeStdio(ctx, s, toServerR, toClientW)
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
	return c, wait
}

func TestStdioServesAndInjectsFaults(t *testing.T) {
	s := testScript(t, TransportStdio, ProtocolLegacy,
		Fault{Kind: KindJSONRPCError, Code: -32001, Message: "stdio exploded", Match: Match{Tool: "echo"}, Count: 1},
		Fault{Kind: KindToolError, Text: "bad greet", Match: Match{Tool: "greet"}, Count: 1},
	)
	s.Admin = ""
	c, _ := stdioPair(t, s)
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
	s := testScript(t, TransportStdio, ProtocolLegacy, Fault{Kind: KindCrash, Match: Match{Tool: "echo"}})
	s.Admin = ""
	c, wait := stdioPair(t, s)
	_, err, took := call(c, "echo", nil, 5*time.Second)
	if err == nil || took > time.Second {
		t.Fatalf("call to crashed stdio backend: %v after %s", err, took)
	}
	if err := wait(); !errors.Is(err, ErrCrashed) {
		t.Fatalf("ServeStdio returned %v, want ErrCrashed", err)
	}
}

func TestStdioStallHoldsUntilDeadline(t *testing.T) {
	s := testScript(t, TransportStdio, ProtocolLegacy, Fault{Kind: KindStall, Match: Match{Tool: "slow"}})
	s.Admin = ""
	c, _ := stdioPair(t, s)
	_, err, took := call(c, "slow", nil, 300*time.Millisecond)
	if err == nil || took < 300*time.Millisecond {
		t.Fatalf("stall over stdio ended after %s: %v", took, err)
	}
	if res, err, _ := call(c, "greet", nil, 5*time.Second); err != nil || resultText(res) != "hello" {
		t.Fatalf("other tools during a stall: %v", err)
	}
}
