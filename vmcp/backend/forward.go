package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// forwardIDBase starts the ids of forwarded requests far above those of
// mcp-go's client on the same connection (it counts from 1), so the two
// never meet; the ids stay within the 15 digits idKey reads as they are.
const forwardIDBase = 100_000_000_000_000

// Forwardable reports whether Forward may carry requests on the
// connection: a sessionful (2025-11-25) one, whose requests need no
// per-request _meta or headers (mcp-go's client adds those on the
// stateless revision).
func (c *Conn) Forwardable() bool { return !mcp.IsModernProtocol(c.protocol) }

// Forward sends one request whose params are already encoded and returns
// the backend's result as it came, without decoding it into mcp-go's
// types: the gateway's pass-through hop. On a sessionful streamable-HTTP
// connection it sends directly (forwardhttp.go) and takes the plain
// answer after one scan; any other answer, and any other connection, goes
// through the connection's transport. It must run inside Invoke, like any
// request: the transport's validators (id, size, shape, stream) check
// every answer but the plain one, Invoke bounds and classifies it. A JSON-RPC error answer is returned as the client would
// return it; a result that is not a JSON object is an invalid response.
func (c *Conn) Forward(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	id := forwardIDBase + c.forwarded.Add(1)
	if err := ctx.Err(); err != nil {
		return nil, transport.NewError(err) // not sent: nothing to cancel
	}
	if c.directHTTP() {
		return c.forwardHTTP(ctx, id, method, params, nil)
	}
	return c.forwardClient(ctx, id, method, params, nil)
}

// forwardClient sends request id, with the request's own headers hdr
// (nil on a sessionful connection), on the connection's transport
// (mcp-go's).
func (c *Conn) forwardClient(ctx context.Context, id int64, method string, params json.RawMessage, hdr http.Header) (json.RawMessage, error) {
	resp, err := c.client.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Method: method, Params: params, Header: hdr})
	if err != nil {
		if ctx.Err() != nil && c.isStdio() {
			// What mcp-go's client does for its own requests over stdio
			// (Invoke announces those over sessionful HTTP).
			c.notifyCancelled(strconv.FormatInt(id, 10), ctx.Err().Error())
		}
		return nil, transport.NewError(err)
	}
	if resp.Error != nil {
		return nil, resp.Error.AsError()
	}
	if r := bytes.TrimSpace(resp.Result); len(r) == 0 || r[0] != '{' {
		return nil, &invalidResponseError{Reason: fmt.Sprintf("%s result is not a JSON object: %s", method, oneLine(string(r), 80))}
	}
	return resp.Result, nil
}
