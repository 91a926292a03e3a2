package fakebackends

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestScriptedResultsCarryResultType: the tool_error and wrong-id answers
// to a 2026-07-28 request carry "resultType": "complete" like the
// backend's normal answers (a strict gateway rejects a result without
// it); answers to a legacy request do not.
func TestScriptedResultsCarryResultType(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault Fault
	}{
		{"tool_error", Fault{Kind: faults.KindToolError, Match: Match{Method: "tools/call", Tool: "echo"}, Params: &faults.ToolError{Text: "own error"}}},
		{"wrong_id", Fault{Kind: faults.KindMalformed, Match: Match{Method: "tools/call", Tool: "echo"}, Params: &faults.Malformed{Variant: faults.MalformedWrongID}}},
	} {
		b := startBackend(t, testScript(t, TransportStreamableHTTP, ProtocolAuto, tc.fault))
		for _, modern := range []bool{true, false} {
			res := rawResult(t, b.URL(), modern, "echo")
			got, has := res["resultType"]
			if modern && got != "complete" {
				t.Errorf("%s, modern: resultType %v, want complete (%v)", tc.name, got, res)
			}
			if !modern && has {
				t.Errorf("%s, legacy: resultType %v on a legacy answer", tc.name, got)
			}
		}
		// The normal answer, for comparison, does carry it.
		if got := rawResult(t, b.URL(), true, "slow")["resultType"]; got != "complete" {
			t.Errorf("normal modern answer: resultType %v", got)
		}
	}
}

// rawResult POSTs a tools/call of tool (on the 2026-07-28 revision when
// modern) and returns the answer's result object.
func rawResult(t *testing.T, url string, modern bool, tool string) map[string]any {
	t.Helper()
	params := map[string]any{"name": tool, "arguments": map[string]any{}}
	if modern {
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    mcp.LATEST_PROTOCOL_VERSION,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "t", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if modern {
		req.Header.Set(mcp.HeaderProtocolVersion, mcp.LATEST_PROTOCOL_VERSION)
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", tool)
	} else {
		req.Header.Set(mcp.HeaderProtocolVersion, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	text := string(raw)
	if i := strings.Index(text, "data: "); i >= 0 {
		text = strings.TrimSpace(strings.SplitN(text[i+6:], "\n", 2)[0])
	}
	var msg struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal([]byte(text), &msg); err != nil || msg.Result == nil {
		t.Fatalf("tools/call %s (modern %v): HTTP %d: %s", tool, modern, resp.StatusCode, raw)
	}
	return msg.Result
}
