package backend

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// nilResponseTransport answers every request with no response and no
// error: mcp-go's client.sendRequest then dereferences the nil response
// (Initialize → negotiateModern → Discover → sendRequest). The gateway's
// own transports are wrapped so that this is an invalid response
// (answered.go, answered_test.go); given to the client unwrapped, it
// exercises the recover guard kept as defense in depth.
type nilResponseTransport struct{}

func (nilResponseTransport) Start(context.Context) error { return nil }
func (nilResponseTransport) SendRequest(context.Context, transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	return nil, nil
}
func (nilResponseTransport) SendNotification(context.Context, mcp.JSONRPCNotification) error {
	return nil
}
func (nilResponseTransport) SetNotificationHandler(func(mcp.JSONRPCNotification)) {}
func (nilResponseTransport) Close() error                                         { return nil }
func (nilResponseTransport) GetSessionId() string                                 { return "" }

// TestInvokeClientPanicIsBackendError: a request that panics inside the
// MCP client (a nil client, a transport left without a response) must end
// as a classified backend error naming the backend, and retire the
// connection so the next call re-initializes; it must never crash the
// gateway or surface as a tool handler's recovered panic. Fails (panics)
// without guarded in Invoke.
func TestInvokeClientPanicIsBackendError(t *testing.T) {
	t.Parallel()
	cases := map[string]func(*Conn){
		"nil client":          func(c *Conn) {},
		"nil response (init)": func(c *Conn) { c.client = client.NewClient(nilResponseTransport{}) },
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			c := testConn(t)
			setup(c)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			be := c.Invoke(ctx, "initialize", time.Second, func(ctx context.Context) error {
				_, err := c.Client().Initialize(ctx, mcp.InitializeRequest{})
				return err
			})
			if be == nil {
				t.Fatal("Invoke returned no error for a request that panicked")
			}
			if be.Backend != "beta" || be.Op != "initialize" || be.Kind != KindTransport {
				t.Errorf("error = backend %q op %q kind %q, want beta, initialize, %s", be.Backend, be.Op, be.Kind, KindTransport)
			}
			if !strings.Contains(be.Error(), "beta") || !strings.Contains(be.Error(), "nil pointer") {
				t.Errorf("error %q does not name the backend and the failure", be.Error())
			}
			if c.Alive() {
				t.Error("the connection is still alive after its client panicked")
			}
			be = c.Invoke(ctx, "tools/call", time.Second, func(ctx context.Context) error {
				_, err := c.Client().CallTool(ctx, mcp.CallToolRequest{})
				return err
			})
			if be == nil || be.Backend != "beta" {
				t.Errorf("a call on the retired connection = %v, want an error naming beta", be)
			}
		})
	}
}

// TestRunBoundedPanicIsError: Start runs on its own goroutine in Dial; a
// panic there must come back as an error, not kill the process.
func TestRunBoundedPanicIsError(t *testing.T) {
	t.Parallel()
	var nilClient *client.Client
	err := runBounded(context.Background(), func() {}, func() error { return nilClient.Start(context.Background()) })
	if err == nil || !strings.Contains(err.Error(), "nil pointer") {
		t.Fatalf("runBounded = %v, want the panic as an error", err)
	}
}
