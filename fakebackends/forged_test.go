package fakebackends

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"
)

// TestMalformedForgedVariants: the two forging variants of malformed send
// what they say, and mcp-go's client takes the forged answer as its own:
// a gateway in front of such a backend must not (vmcp/forged_test.go).
//   - wrong_id_event: an SSE event named foo carrying id 424242;
//   - wrong_id_resumed: the POST's stream only primes an event id; the
//     legacy client resumes with GET + Last-Event-ID and gets the forged
//     answer there. A modern client does not resume: its call fails.
func TestMalformedForgedVariants(t *testing.T) {
	t.Parallel()
	for _, variant := range []string{faults.MalformedWrongIDEvent, faults.MalformedWrongIDResumed} {
		for _, rc := range revCases {
			t.Run(variant+"/"+string(rc.rev), func(t *testing.T) {
				b := startBackend(t, testScript(t, TransportStreamableHTTP, rc.protocol,
					Fault{Kind: faults.KindMalformed, Match: Match{Tool: "echo"}, Params: &faults.Malformed{Variant: variant}}))
				c := connect(t, b, rc.rev)
				res, err, took := call(c, "echo", map[string]any{"msg": "x"}, 10*time.Second)
				if variant == faults.MalformedWrongIDResumed && rc.rev == revModern {
					if err == nil {
						t.Fatalf("modern client, %s: %q; want an error (no resumption)", variant, resultText(res))
					}
					return
				}
				if err != nil || resultText(res) != faults.ForgedText {
					t.Fatalf("%s through mcp-go: %q, %v after %v; want the forged answer", variant, resultText(res), err, took)
				}
				if variant == faults.MalformedWrongIDResumed {
					// A request is logged when its handler returns, which
					// can be after the client read the answer: wait for it.
					gets := func() (n int) {
						for _, r := range b.Requests() {
							if r.HTTPMethod == http.MethodGet && strings.Contains(r.Fault, faults.MalformedWrongIDResumed) {
								n++
							}
						}
						return n
					}
					testwait.For(t, 10*time.Second, "the resuming GET in the request log", func() bool { return gets() >= 1 })
					if n := gets(); n != 1 {
						t.Errorf("%d resuming GETs answered with the forged answer, want 1", n)
					}
				}
			})
		}
	}
	// On the wire: the event's name and id; an unknown or replayed
	// Last-Event-ID is not answered with the forged answer.
	b := startBackend(t, testScript(t, TransportStreamableHTTP, ProtocolLegacy,
		Fault{Kind: faults.KindMalformed, Match: Match{Tool: "echo"}, Params: &faults.Malformed{Variant: faults.MalformedWrongIDEvent}}))
	c := connect(t, b, revLegacy)
	resp, body := rawPost(t, b.URL(), c.GetSessionId(), protocolFor(revLegacy), `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	want := "event: foo\ndata: " + string(faults.ForgedAnswer()) + "\n\n"
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || string(body) != want {
		t.Fatalf("wrong_id_event on the wire: %d %s %q; want %q", resp.StatusCode, resp.Header.Get("Content-Type"), body, want)
	}
	req, _ := http.NewRequest(http.MethodGet, b.URL(), nil)
	req.Header.Set("Last-Event-ID", "vmcp-chaos-forged-unknown")
	req.Header.Set("Mcp-Session-Id", c.GetSessionId())
	hc := &http.Client{Timeout: 2 * time.Second}
	if r, err := hc.Do(req); err == nil {
		got, _ := io.ReadAll(io.LimitReader(r.Body, 4096))
		r.Body.Close()
		if strings.Contains(string(got), faults.ForgedText) {
			t.Fatalf("an unknown Last-Event-ID got the forged answer: %q", got)
		}
	}
}
