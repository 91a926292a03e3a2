package backend

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestWithRequestMeta: the stateless forward's params carry the _meta
// mcp-go's client adds on the 2026-07-28 revision (protocol version,
// capabilities, client identity), the client's progress token, and the
// params as they were, for empty and non-empty params.
func TestWithRequestMeta(t *testing.T) {
	c := &Conn{d: &Dialer{clientInfo: mcp.Implementation{Name: "gw", Version: "1"}}, protocol: mcp.LATEST_PROTOCOL_VERSION}
	for _, tc := range []struct{ params, progress string }{
		{`{}`, ""}, {``, ""}, {`{"name":"echo","arguments":{"x":1}}`, ""}, {`{"uri":"mem://a"}`, `"tok"`}, {`{}`, `7`},
	} {
		var progress json.RawMessage
		if tc.progress != "" {
			progress = json.RawMessage(tc.progress)
		}
		out := c.withRequestMeta(json.RawMessage(tc.params), progress)
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s: %s is not JSON: %v", tc.params, out, err)
		}
		meta, _ := got["_meta"].(map[string]any)
		delete(got, "_meta")
		want := map[string]any{}
		if tc.params != "" {
			_ = json.Unmarshal([]byte(tc.params), &want)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: params %v, want %v", tc.params, got, want)
		}
		m := &mcp.Meta{AdditionalFields: meta}
		if m.ProtocolVersion() != mcp.LATEST_PROTOCOL_VERSION || m.ClientCapabilities() == nil || m.ClientInfo() == nil || m.ClientInfo().Name != "gw" {
			t.Errorf("%s: _meta %v lacks what mcp-go's client sends", tc.params, meta)
		}
		var wantTok any
		if tc.progress != "" {
			_ = json.Unmarshal(progress, &wantTok)
		}
		if meta["progressToken"] != wantTok {
			t.Errorf("%s: progressToken %v, want %v", tc.params, meta["progressToken"], wantTok)
		}
	}
}
