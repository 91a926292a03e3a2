package vmcp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
)

const faultTimeouts = "timeouts: {initialize: 2s, call: 1s, list: 2s, close: 500ms}\nlimits: {maxResponseBytes: 64KiB}\n"

const plainAlpha = `
name: alpha
protocol: legacy
tools:
  - {name: echo}
`

const plainBeta = `
name: beta
protocol: legacy
tools:
  - {name: echo}
  - {name: other, result: {text: fine}}
`

// TestFaultMatrix injects each fault kind into beta's echo and checks the
// error text, kind and _meta the client sees, and how fast it sees them.
func TestFaultMatrix(t *testing.T) {
	t.Parallel()
	callMatch := faults.Match{Method: "tools/call", Tool: "echo"}
	cases := []struct {
		name     string
		fault    faults.Fault
		kind     string
		text     string // the text must start with this
		maxDelay time.Duration
		minDelay time.Duration
	}{
		{"crash eof", faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashEOF}}, "connection_closed", `backend "beta" unavailable: connection closed`, atOnceBound, 0},
		{"crash reset", faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashReset}}, "connection_reset", `backend "beta" unavailable: connection reset`, atOnceBound, 0},
		{"crash eof after headers", faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashEOF, Stage: faults.StageAfterHeaders}}, "connection_closed", `backend "beta" unavailable: connection closed`, atOnceBound, 0},
		{"http 403", faults.Fault{Kind: faults.KindHTTPStatus, Params: &faults.HTTPStatus{Status: 403, Body: &faults.Body{Text: "Forbidden"}}}, "http_status", `backend "beta" unavailable: HTTP 403 Forbidden`, atOnceBound, 0},
		{"http 401", faults.Fault{Kind: faults.KindHTTPStatus, Params: &faults.HTTPStatus{Status: 401}}, "http_status", `backend "beta" unavailable: HTTP 401 Unauthorized`, atOnceBound, 0},
		{"http 500 json body", faults.Fault{Kind: faults.KindHTTPStatus, Params: &faults.HTTPStatus{Status: 500, Body: &faults.Body{JSON: map[string]any{"jsonrpc": "2.0", "id": 1, "error": map[string]any{"code": -32603, "message": "boom"}}}}}, "http_status", `backend "beta" unavailable: HTTP 500 Internal Server Error`, atOnceBound, 0},
		{"stall before headers", faults.Fault{Kind: faults.KindStall}, "timeout", `backend "beta" unavailable: timed out after 1s`, time.Second + atOnceBound, 950 * time.Millisecond},
		{"stall after headers", faults.Fault{Kind: faults.KindStall, Params: &faults.Stall{Stage: faults.StageAfterHeaders}}, "timeout", `backend "beta" unavailable: timed out after 1s`, time.Second + atOnceBound, 950 * time.Millisecond},
		{"malformed json", faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedInvalidJSON}}, "invalid_response", `backend "beta" unavailable: invalid response`, atOnceBound, 0},
		{"wrong id", faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedWrongID}}, "invalid_response", `backend "beta" unavailable: invalid response`, atOnceBound, 0},
		{"truncated sse", faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedTruncatedSSE}}, "invalid_response", `backend "beta" unavailable: invalid response`, atOnceBound, 0},
		{"oversized", faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedOversized, Size: 1 << 20}}, "invalid_response", `backend "beta" unavailable: invalid response`, atOnceBound, 0},
		{"jsonrpc error", faults.Fault{Kind: faults.KindJSONRPCError, Params: &faults.JSONRPCError{Code: -32603, Message: "kaput"}}, "jsonrpc_error", `backend "beta" error: kaput`, atOnceBound, 0},
		// No answer at all: never a success with an empty result, never a
		// panic (issue 12: a transport left without a response).
		{"202 accepted", faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedAccepted}}, "invalid_response", `backend "beta" unavailable: invalid response: HTTP 202 Accepted with no response`, atOnceBound, 0},
		{"empty body", faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedEmptyBody}}, "invalid_response", `backend "beta" unavailable: invalid response: HTTP 200 OK with an empty body`, atOnceBound, 0},
		{"unanswered sse", faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedUnansweredSSE}}, "invalid_response", `backend "beta" unavailable: invalid response: truncated stream: it ended before the response`, atOnceBound, 0},
		{"no result", faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedNoResult}}, "invalid_response", `backend "beta" unavailable: invalid response: response to request`, atOnceBound, 0},
	}
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	g := startGateway(t, gwConfig(faultTimeouts, a, b))
	for _, modern := range []bool{false, true} {
		c := connect(t, g.URL(), modern)
		for _, tc := range cases {
			t.Run(tc.name+map[bool]string{false: "/legacy", true: "/modern"}[modern], func(t *testing.T) {
				f := tc.fault
				f.Match = callMatch
				if err := b.SetFaults(f); err != nil {
					t.Fatal(err)
				}
				defer b.ClearFaults()
				res, d := callTool(t, c, "beta_echo", map[string]any{"x": 1})
				text := resultText(res)
				backend, kind := metaOf(res)
				t.Logf("%-24s %8.1fms  %s  [kind %s]", tc.name, float64(d.Microseconds())/1000, text, kind)
				if !res.IsError {
					t.Fatalf("want isError, got %q", text)
				}
				if !strings.HasPrefix(text, tc.text) {
					t.Errorf("text = %q, want prefix %q", text, tc.text)
				}
				if backend != "beta" {
					t.Errorf("_meta vmcp/backend = %q", backend)
				}
				if kind != tc.kind {
					t.Errorf("_meta vmcp/errorKind = %q, want %q", kind, tc.kind)
				}
				if d > tc.maxDelay || d < tc.minDelay {
					t.Errorf("took %v, want in [%v, %v]", d, tc.minDelay, tc.maxDelay)
				}
				// alpha keeps working in the same session.
				if res, _ := callTool(t, c, "alpha_echo", nil); res.IsError {
					t.Errorf("alpha failed too: %s", resultText(res))
				}
				b.ClearFaults()
				// beta recovers on the next call.
				if res, _ := callTool(t, c, "beta_other", nil); res.IsError {
					t.Errorf("beta did not recover: %s", resultText(res))
				}
			})
		}
	}
}
