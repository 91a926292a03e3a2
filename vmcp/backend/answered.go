package backend

import (
	"context"

	"github.com/mark3labs/mcp-go/client/transport"
)

// mcp-go's client dereferences the response of every request whose
// transport returned no error (client.sendRequest: `response.Error`,
// client.go:284 in v1.2.1), and so does listShared. A transport that
// returns neither a response nor an error would make that a nil-pointer
// panic, which only the recover guard (guard.go) would turn into a
// backend error. None of mcp-go v1.2.1's transports does on any answer a
// backend can send (see answered_test.go), but that is their contract,
// not a check: each transport the gateway builds is wrapped so that the
// broken contract is an invalid response naming the backend, before the
// client reads it.

// answered returns resp and err, or an invalid response error when both
// are nil.
func answered(method string, resp *transport.JSONRPCResponse, err error) (*transport.JSONRPCResponse, error) {
	if resp == nil && err == nil {
		return nil, &invalidResponseError{Reason: method + ": the transport returned neither a response nor an error"}
	}
	return resp, err
}

// httpTransport is what the client uses of mcp-go's streamable HTTP
// transport: the optional interfaces it looks for (HTTPConnection,
// BidirectionalInterface, RequiresLegacyProtocol).
type httpTransport interface {
	transport.BidirectionalInterface
	SetProtocolVersion(version string)
	RequiresLegacyProtocol() bool
}

// sseTransport is what the client uses of mcp-go's legacy HTTP+SSE
// transport: HTTPConnection and SetConnectionLostHandler (it is not a
// BidirectionalInterface).
type sseTransport interface {
	transport.Interface
	SetProtocolVersion(version string)
	SetConnectionLostHandler(handler func(error))
}

// The wrappers keep the optional interfaces the client looks for (that
// mcp-go's transports have them is checked where newTransport wraps them).
var (
	_ transport.BidirectionalInterface = answeredHTTP{}
	_ transport.HTTPConnection         = answeredHTTP{}
	_ transport.HTTPConnection         = answeredSSE{}
)

// answeredHTTP is a streamable HTTP transport whose requests end with a
// response or an error.
type answeredHTTP struct{ httpTransport }

// SendRequest is the transport's SendRequest, never (nil, nil).
func (t answeredHTTP) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.httpTransport.SendRequest(ctx, req)
	return answered(req.Method, resp, err)
}

// answeredSSE is a legacy HTTP+SSE transport whose requests end with a
// response or an error.
type answeredSSE struct{ sseTransport }

// SendRequest is the transport's SendRequest, never (nil, nil).
func (t answeredSSE) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.sseTransport.SendRequest(ctx, req)
	return answered(req.Method, resp, err)
}
