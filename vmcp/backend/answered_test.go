package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// answerBound bounds a request that must fail at once (the kind proves it
// did not wait for a timeout; the bound only catches a hang on a loaded
// machine).
const answerBound = 5 * time.Second

// panicLog counts the "panicked" records Invoke logs when its recover guard
// caught a panic, so a test can tell a condition handled before mcp-go
// dereferenced it from one the guard saved.
type panicLog struct {
	mu    sync.Mutex
	n     int
	first string
}

func (h *panicLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *panicLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *panicLog) WithGroup(string) slog.Handler            { return h }
func (h *panicLog) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "panicked") {
		h.mu.Lock()
		if h.n == 0 {
			h.first = r.Message
			r.Attrs(func(a slog.Attr) bool { h.first += " " + a.String(); return true })
		}
		h.n++
		h.mu.Unlock()
	}
	return nil
}

func (h *panicLog) check(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n > 0 {
		t.Errorf("%d requests were saved by the recover guard (the condition reached mcp-go), first: %s", h.n, h.first)
	}
}

// wantNoPanic fails when be came from the recover guard.
func wantNoPanic(t *testing.T, be *Error) {
	t.Helper()
	if pe := (*clientPanicError)(nil); errors.As(be, &pe) {
		t.Errorf("%v came from a recovered panic: %v", be, pe.value)
	}
}

// unansweringTransport answers initialize and returns neither a response
// nor an error to every other request (server/discover included). It has
// every method the wrapped mcp-go transports have.
type unansweringTransport struct{ sent []string }

func (*unansweringTransport) Start(context.Context) error { return nil }
func (u *unansweringTransport) SendRequest(_ context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	u.sent = append(u.sent, req.Method)
	if req.Method != string(mcp.MethodInitialize) {
		return nil, nil
	}
	res, _ := json.Marshal(mcp.InitializeResult{ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		Capabilities: mcp.ServerCapabilities{Tools: &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{}}})
	return transport.NewJSONRPCResultResponse(req.ID, res), nil
}
func (*unansweringTransport) SendNotification(context.Context, mcp.JSONRPCNotification) error {
	return nil
}
func (*unansweringTransport) SetNotificationHandler(func(mcp.JSONRPCNotification)) {}
func (*unansweringTransport) SetRequestHandler(transport.RequestHandler)           {}
func (*unansweringTransport) SetConnectionLostHandler(func(error))                 {}
func (*unansweringTransport) SetProtocolVersion(string)                            {}
func (*unansweringTransport) RequiresLegacyProtocol() bool                         { return false }
func (*unansweringTransport) Close() error                                         { return nil }
func (*unansweringTransport) GetSessionId() string                                 { return "" }

// TestTransportWithoutAnswerIsInvalidResponse: a transport that returns
// neither a response nor an error (mcp-go's client then dereferences the
// nil response, client.go:284 in v1.2.1) is an invalid response naming the
// backend, handled by the wrappers the gateway puts around every transport
// before the client reads it: not a panic saved by the recover guard.
// Fails (a "panicked" record, kind transport_error) without answeredHTTP
// and answeredSSE.
func TestTransportWithoutAnswerIsInvalidResponse(t *testing.T) {
	t.Parallel()
	wraps := map[string]func(*unansweringTransport) transport.Interface{
		"streamable-http": func(u *unansweringTransport) transport.Interface { return answeredHTTP{u} },
		"sse":             func(u *unansweringTransport) transport.Interface { return answeredSSE{u} },
	}
	for name, wrap := range wraps {
		t.Run(name, func(t *testing.T) {
			log := &panicLog{}
			c := testConn(t)
			c.d.logger = slog.New(log)
			inner := &unansweringTransport{}
			c.client = client.NewClient(wrap(inner))
			ctx, cancel := context.WithTimeout(context.Background(), answerBound)
			defer cancel()

			// Initialize probes with server/discover (no answer: not a
			// modern server), then falls back to initialize.
			be := c.Invoke(ctx, "initialize", answerBound, func(ctx context.Context) error {
				_, err := c.Client().Initialize(ctx, mcp.InitializeRequest{})
				return err
			})
			if be != nil {
				t.Fatalf("initialize: %v (sent %v)", be, inner.sent)
			}
			if len(inner.sent) == 0 || inner.sent[0] != string(mcp.MethodServerDiscover) {
				t.Errorf("requests sent %v, want server/discover first", inner.sent)
			}

			calls := map[string]func(context.Context) error{
				"tools/call": func(ctx context.Context) error {
					_, err := c.Client().CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "echo"}})
					return err
				},
				"tools/list": func(ctx context.Context) error {
					_, err := c.Client().ListTools(ctx, mcp.ListToolsRequest{})
					return err
				},
				"ping": func(ctx context.Context) error { return c.Client().Ping(ctx) },
			}
			for op, fn := range calls {
				be := c.Invoke(ctx, op, answerBound, fn)
				if be == nil {
					t.Fatalf("%s: no error for a request without an answer", op)
				}
				wantNoPanic(t, be)
				want := fmt.Sprintf(`backend "beta" unavailable: invalid response: %s: the transport returned neither a response nor an error`, op)
				if be.Backend != "beta" || be.Op != op || be.Kind != KindInvalidResponse || be.Error() != want {
					t.Errorf("%s: got %q (backend %q, op %q, kind %s), want %q (kind %s)", op, be, be.Backend, be.Op, be.Kind, want, KindInvalidResponse)
				}
			}
			if !c.Alive() {
				t.Error("the connection was retired: only a recovered panic should do that")
			}
			log.check(t)
		})
	}
}

// dialFake dials fake backend fb (its script's transport) with pin ("" to
// negotiate), with timeouts small enough for tests and large enough for a
// loaded machine.
func dialFake(t *testing.T, fb *fakebackends.Backend, pin string, log *panicLog) *Conn {
	t.Helper()
	s := fb.Script()
	yaml := fmt.Sprintf("backends:\n  - {name: %s, url: %q, transport: %s}\ntimeouts: {initialize: 5s, call: 5s, list: 5s, close: 1s}\n",
		s.Name, fb.URL(), s.Transport)
	cfg, err := config.Parse([]byte(yaml), t.Name()+".yaml")
	if err != nil {
		t.Fatal(err)
	}
	life, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	d := NewDialer(life, cfg, http.DefaultTransport, slog.New(log), mcp.Implementation{Name: "vmcp-test", Version: "1"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, be := d.DialPinned(ctx, cfg.Backends[0], pin)
	if be != nil {
		t.Fatalf("dial %s: %v", s.Name, be)
	}
	t.Cleanup(func() {
		select {
		case <-c.Close():
		case <-time.After(10 * time.Second):
			t.Error("close took over 10s")
		}
	})
	return c
}

func startFakeBackend(t *testing.T, transport fakebackends.Transport, protocol string) *fakebackends.Backend {
	t.Helper()
	script := fmt.Sprintf("name: beta\ntransport: %s\nprotocol: %s\ntools:\n  - {name: echo}\n", transport, protocol)
	s, err := fakebackends.ParseScript([]byte(script), t.Name()+".yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fb, err := fakebackends.Start(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fb.Close() })
	return fb
}

func callEcho(c *Conn) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := c.Client().CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "echo"}})
		return err
	}
}

func listTools(c *Conn) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := c.Client().ListTools(ctx, mcp.ListToolsRequest{})
		return err
	}
}

// TestNoAnswerFromBackendIsInvalidResponse drives every way a backend can
// answer a request with no answer at all, through a real fake backend (the
// malformed variants accepted, empty_body, unanswered_sse, no_result) and
// mcp-go's transports: each is an invalid response naming the backend whose
// cause says what came, at once, never a panic and never a success with an
// empty result. These are the candidates for a transport returning (nil,
// nil); mcp-go v1.2.1 returns an error (or an empty response) for each, and
// the gateway's validators name the problem first.
func TestNoAnswerFromBackendIsInvalidResponse(t *testing.T) {
	t.Parallel()
	type tc struct {
		variant string
		cause   string // the cause starts with this
	}
	httpCases := []tc{
		{faults.MalformedAccepted, "invalid response: HTTP 202 Accepted with no response to request "},
		{faults.MalformedEmptyBody, "invalid response: HTTP 200 OK with an empty body, no response to request "},
		{faults.MalformedUnansweredSSE, "invalid response: truncated stream: it ended before the response"},
		{faults.MalformedNoResult, "invalid response: response to request "},
	}
	for _, transportName := range []fakebackends.Transport{fakebackends.TransportStreamableHTTP, fakebackends.TransportSSE} {
		for _, pin := range []string{mcp.LATEST_LEGACY_PROTOCOL_VERSION, mcp.LATEST_PROTOCOL_VERSION} {
			if transportName == fakebackends.TransportSSE && pin != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
				continue // the SSE fake serves the legacy revision
			}
			t.Run(fmt.Sprintf("%s/%s", transportName, pin), func(t *testing.T) {
				fb := startFakeBackend(t, transportName, "auto")
				log := &panicLog{}
				c := dialFake(t, fb, pin, log)
				cases := httpCases
				if transportName == fakebackends.TransportSSE {
					// The others are streamable HTTP only.
					cases = []tc{{faults.MalformedNoResult, "invalid response: response to request "}}
				}
				for _, k := range cases {
					for op, fn := range map[string]func(*Conn) func(context.Context) error{"tools/call": callEcho, "tools/list": listTools} {
						if !c.Alive() {
							// no_result on the SSE session stream fails the
							// connection, as any bad message there does.
							c = dialFake(t, fb, pin, log)
						}
						f := faults.Fault{Kind: faults.KindMalformed, Match: faults.Match{Method: op}, Params: &faults.Malformed{Variant: k.variant}}
						if err := fb.SetFaults(f); err != nil {
							t.Fatal(err)
						}
						ctx, cancel := context.WithTimeout(context.Background(), 2*answerBound)
						start := time.Now()
						be := c.Invoke(ctx, op, answerBound, fn(c))
						d := time.Since(start)
						cancel()
						fb.ClearFaults()
						if be == nil {
							t.Errorf("%s %s: succeeded, want an invalid response", k.variant, op)
							continue
						}
						t.Logf("%-15s %-10s %6.1fms %s", k.variant, op, float64(d.Microseconds())/1000, be)
						wantNoPanic(t, be)
						if be.Backend != "beta" || be.Kind != KindInvalidResponse || !strings.HasPrefix(be.Cause, k.cause) {
							t.Errorf("%s %s: got %q (kind %s), want kind %s with cause %q…", k.variant, op, be, be.Kind, KindInvalidResponse, k.cause)
						}
						if d > answerBound {
							t.Errorf("%s %s: took %v, want it at once", k.variant, op, d)
						}
					}
				}
				log.check(t)
			})
		}
	}
}

// TestCloseDuringRequestsIsClosed: closing a connection while requests are
// in flight on it (a session closing, a re-initialization replacing it)
// ends each of them at once as "closed" naming the backend, never with a
// panic in the client or the transport, whose Close races the requests.
func TestCloseDuringRequestsIsClosed(t *testing.T) {
	t.Parallel()
	for _, transportName := range []fakebackends.Transport{fakebackends.TransportStreamableHTTP, fakebackends.TransportSSE} {
		t.Run(string(transportName), func(t *testing.T) {
			fb := startFakeBackend(t, transportName, "legacy")
			log := &panicLog{}
			c := dialFake(t, fb, mcp.LATEST_LEGACY_PROTOCOL_VERSION, log)
			if err := fb.SetFaults(faults.Fault{Kind: faults.KindStall, Match: faults.Match{Method: "tools/call"}}); err != nil {
				t.Fatal(err)
			}
			const n = 8
			errs := make(chan *Error, n)
			for range n {
				go func() { errs <- c.Invoke(context.Background(), "tools/call", time.Minute, callEcho(c)) }()
			}
			gomega.NewWithT(t).Eventually(fb.InFlight).WithTimeout(answerBound).WithPolling(5*time.Millisecond).
				Should(gomega.BeNumerically(">=", n), "calls in flight at the backend (of %d sent)", n)
			start := time.Now()
			closed := c.Close()
			for range n {
				select {
				case be := <-errs:
					if be == nil || be.Backend != "beta" || be.Kind != KindClosed {
						t.Errorf("in-flight call at close: %v, want kind %s naming beta", be, KindClosed)
					} else {
						wantNoPanic(t, be)
					}
				case <-time.After(answerBound):
					t.Fatalf("an in-flight call still runs %v after close", answerBound)
				}
			}
			t.Logf("%d in-flight calls ended %v after close", n, time.Since(start))
			fb.ClearFaults() // releases the stalls, so the backend's handlers end
			select {
			case <-closed:
			case <-time.After(10 * time.Second):
				t.Fatal("close did not end within 10s")
			}
			if be := c.Invoke(context.Background(), "tools/call", time.Second, callEcho(c)); be == nil || be.Kind != KindClosed {
				t.Errorf("a call after close: %v, want kind %s", be, KindClosed)
			}
			log.check(t)
		})
	}
}

// TestAnswerRacingDeadline: a deadline that ends a request while its answer
// arrives (swept over the whole answer time) ends it either with the
// answer or as a timeout naming the backend: never a panic, never a
// success without a result.
func TestAnswerRacingDeadline(t *testing.T) {
	t.Parallel()
	for _, transportName := range []fakebackends.Transport{fakebackends.TransportStreamableHTTP, fakebackends.TransportSSE} {
		t.Run(string(transportName), func(t *testing.T) {
			fb := startFakeBackend(t, transportName, "legacy")
			log := &panicLog{}
			c := dialFake(t, fb, mcp.LATEST_LEGACY_PROTOCOL_VERSION, log)
			const latency = 20 * time.Millisecond
			if err := fb.SetFaults(faults.Fault{Kind: faults.KindLatency, Match: faults.Match{Method: "tools/call"}, Params: &faults.Latency{Delay: fakebackends.Duration(latency)}}); err != nil {
				t.Fatal(err)
			}
			ok, timedOut := 0, 0
			for i := range 30 {
				timeout := time.Duration(i) * latency / 15 // 0 .. 2×latency
				// After a timeout on SSE a stream probe runs with a third
				// of the timeout and may retire the connection: wait for
				// it, as the gateway's callers do.
				if !c.AliveAfterProbe(context.Background()) {
					c = dialFake(t, fb, mcp.LATEST_LEGACY_PROTOCOL_VERSION, log)
				}
				var res *mcp.CallToolResult
				be := c.Invoke(context.Background(), "tools/call", max(timeout, time.Millisecond), func(ctx context.Context) error {
					var err error
					res, err = c.Client().CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "echo"}})
					return err
				})
				switch {
				case be == nil && (res == nil || len(res.Content) == 0):
					t.Errorf("timeout %v: success without a result (%v)", timeout, res)
				case be == nil:
					ok++
				case be.Backend != "beta" || be.Kind != KindTimeout:
					t.Errorf("timeout %v: %v (kind %s), want the answer or kind %s", timeout, be, be.Kind, KindTimeout)
				default:
					wantNoPanic(t, be)
					timedOut++
				}
			}
			t.Logf("%d answered, %d timed out", ok, timedOut)
			log.check(t)
		})
	}
}
