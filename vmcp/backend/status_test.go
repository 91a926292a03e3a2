package backend

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
)

// TestUnfollowedRedirectIsHTTPStatus: a 3xx the HTTP client does not
// follow (no Location, or a status that is no redirect) reached mcp-go,
// which takes a JSON body of any status but 200 and 202 as the answer to
// its request, unchecked: a forged answer with another request's id passed
// as the tool's result. It is an HTTP status error naming the backend; a
// redirect with a Location is still followed.
func TestUnfollowedRedirectIsHTTPStatus(t *testing.T) {
	t.Parallel()
	fb := startFakeBackend(t, fakebackends.TransportStreamableHTTP, "legacy")
	log := &panicLog{}
	c := dialFake(t, fb, mcp.LATEST_LEGACY_PROTOCOL_VERSION, log)
	forged := map[string]any{"jsonrpc": "2.0", "id": faults.ForgedID,
		"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": faults.ForgedText}}}}
	call := func() (*mcp.CallToolResult, *Error) {
		var res *mcp.CallToolResult
		be := c.Invoke(context.Background(), "tools/call", answerBound, func(ctx context.Context) error {
			var err error
			res, err = c.Client().CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "echo"}})
			return err
		})
		return res, be
	}
	for _, status := range []int{300, 302, 304, 307, 399} {
		f := faults.Fault{Kind: faults.KindHTTPStatus, Match: faults.Match{Method: "tools/call"}, Params: &faults.HTTPStatus{Status: status, Body: &faults.Body{JSON: forged}}}
		if err := fb.SetFaults(f); err != nil {
			t.Fatal(err)
		}
		res, be := call()
		if be == nil {
			t.Errorf("HTTP %d with a forged JSON answer: the call succeeded with %+v", status, res.Content)
			continue
		}
		if be.Backend != "beta" || be.Kind != KindHTTPStatus || be.Status != status {
			t.Errorf("HTTP %d: %v (kind %s, status %d), want kind %s with the status", status, be, be.Kind, be.Status, KindHTTPStatus)
		}
	}
	// A redirect the client follows (once, to the same endpoint) is served.
	f := faults.Fault{Kind: faults.KindHTTPStatus, Count: 1, Match: faults.Match{Method: "tools/call"}, Params: &faults.HTTPStatus{Status: 307, Headers: map[string]string{"Location": fb.URL()}}}
	if err := fb.SetFaults(f); err != nil {
		t.Fatal(err)
	}
	if res, be := call(); be != nil || res == nil || len(res.Content) == 0 {
		t.Errorf("a followed 307: %v, %+v; want the tool's answer", be, res)
	}
	log.check(t)
}
