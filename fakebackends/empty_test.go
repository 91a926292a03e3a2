package fakebackends

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// answerRecorder records the HTTP answer to the POST of a tools/call.
type answerRecorder struct {
	mu     sync.Mutex
	status int
	ctype  string
	body   string
}

func (a *answerRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var call bool
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		call = strings.Contains(string(b), `"method":"tools/call"`)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || !call {
		return resp, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	a.mu.Lock()
	a.status, a.ctype, a.body = resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	a.mu.Unlock()
	return resp, err
}

// TestMalformedEmptyVariants: the variants that answer a request with no
// answer at all send what they say, on every transport and revision they
// apply to, and mcp-go's client reports each as an error (none is a
// success with an empty result, none leaves it without a response and
// without an error).
func TestMalformedEmptyVariants(t *testing.T) {
	t.Parallel()
	wire := map[string]func(t *testing.T, a *answerRecorder){
		faults.MalformedAccepted: func(t *testing.T, a *answerRecorder) {
			if a.status != http.StatusAccepted || a.body != "" {
				t.Errorf("answer %d %q, want 202 with an empty body", a.status, a.body)
			}
		},
		faults.MalformedEmptyBody: func(t *testing.T, a *answerRecorder) {
			if a.status != http.StatusOK || a.ctype != "application/json" || a.body != "" {
				t.Errorf("answer %d %s %q, want 200 application/json with an empty body", a.status, a.ctype, a.body)
			}
		},
		faults.MalformedUnansweredSSE: func(t *testing.T, a *answerRecorder) {
			if a.status != http.StatusOK || a.ctype != "text/event-stream" ||
				!strings.Contains(a.body, "notifications/message") || strings.Contains(a.body, `"id"`) {
				t.Errorf("answer %d %s %q, want 200 text/event-stream with a notification and no response", a.status, a.ctype, a.body)
			}
		},
		faults.MalformedNoResult: func(t *testing.T, a *answerRecorder) {
			if a.status != http.StatusOK || a.ctype != "application/json" ||
				strings.Contains(a.body, "result") || strings.Contains(a.body, "error") || !strings.Contains(a.body, `"id":`) {
				t.Errorf("answer %d %s %q, want 200 application/json with the id and neither result nor error", a.status, a.ctype, a.body)
			}
		},
	}
	for _, tc := range servingCases {
		for _, variant := range []string{faults.MalformedAccepted, faults.MalformedEmptyBody, faults.MalformedUnansweredSSE, faults.MalformedNoResult} {
			if tc.transport == TransportSSE && variant != faults.MalformedNoResult {
				continue // streamable HTTP only: refused on sse (TestScriptErrors)
			}
			t.Run(caseName(tc.transport, tc.protocol, tc.rev)+"/"+variant, func(t *testing.T) {
				b := startBackend(t, testScript(t, tc.transport, tc.protocol,
					Fault{Kind: faults.KindMalformed, Match: Match{Tool: "echo"}, Params: &faults.Malformed{Variant: variant}}))
				rec := &answerRecorder{}
				c := dialRecorded(t, b, tc.rev, rec)
				res, err, took := call(c, "echo", map[string]any{"msg": "x"}, 10*time.Second)
				if err == nil {
					t.Fatalf("%s: %+v after %v; want an error", variant, res, took)
				}
				t.Logf("mcp-go: %v (%v)", err, took)
				if tc.transport == TransportStreamableHTTP {
					rec.mu.Lock()
					defer rec.mu.Unlock()
					wire[variant](t, rec)
				}
			})
		}
	}
}

// dialRecorded is dial with an HTTP client that records the answer to
// tools/call.
func dialRecorded(t *testing.T, b *Backend, rev revision, rec *answerRecorder) *client.Client {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: rec}
	var tr transport.Interface
	var err error
	if b.script.Transport == TransportSSE {
		tr, err = transport.NewSSE(b.URL(), transport.WithHTTPClient(hc))
	} else {
		tr, err = transport.NewStreamableHTTP(b.URL(), transport.WithHTTPBasicClient(hc))
	}
	if err != nil {
		t.Fatal(err)
	}
	var opts []client.ClientOption
	if rev == revLegacy {
		opts = append(opts, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	}
	c := client.NewClient(tr, append(opts, client.WithDiscoverTimeout(2*time.Second))...)
	t.Cleanup(func() { closeClient(c) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: protocolFor(rev),
		ClientInfo:      mcp.Implementation{Name: "fakebackends-test", Version: "0"},
	}}); err != nil {
		t.Fatal(err)
	}
	return c
}
