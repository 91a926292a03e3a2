package backend

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// The stateless forward: the pass-through hop's request on a stateless
// (2026-07-28) streamable-HTTP connection, as the shared pool holds them.
// It is sent as mcp-go's client would send it on that revision: the
// request's _meta carries the protocol version, the client's capabilities
// and identity (applyRequestMeta), and the Mcp-Method and Mcp-Name headers
// mirror the method and name (applyStandardHeaders). Everything else is the
// direct forward's (forwardhttp.go): the plain answer is taken after one
// scan, every other answer is handed to mcp-go's transport and validators.

// StatelessForwardable reports whether ForwardStateless may carry requests
// on the connection: a stateless (2026-07-28) streamable-HTTP one.
func (c *Conn) StatelessForwardable() bool {
	return c.streamable != nil && mcp.IsModernProtocol(c.protocol)
}

// ForwardStateless sends one request on a stateless connection
// (StatelessForwardable) and returns the backend's result as it came, as
// Forward does. params is the request's params, a JSON object without
// _meta, whose name (tools/call, prompts/get) or uri (resources/read) is
// name; progress is the client's progress token (nil: none). It must run
// inside Invoke, like any request.
func (c *Conn) ForwardStateless(ctx context.Context, method, name string, params, progress json.RawMessage) (json.RawMessage, error) {
	id := forwardIDBase + c.forwarded.Add(1)
	if err := ctx.Err(); err != nil {
		return nil, transport.NewError(err) // not sent: nothing to cancel
	}
	hdr := http.Header{mcp.HeaderMethod: {method}}
	if mcp.MethodRequiresNameHeader(mcp.MCPMethod(method)) {
		if v, ok := mcp.EncodeHeaderValue(name); ok {
			hdr[mcp.HeaderName] = []string{v}
		}
	}
	return c.forwardHTTP(ctx, id, method, c.withRequestMeta(params, progress), hdr)
}

// requestMeta encodes, once per connection, the _meta members mcp-go's
// client adds to every request of the stateless revision: the protocol
// version, the client's capabilities (the gateway's client declares none)
// and its identity.
func (c *Conn) requestMeta() []byte {
	c.metaOnce.Do(func() {
		caps, _ := json.Marshal(mcp.ClientCapabilities{})
		info, _ := json.Marshal(c.d.clientInfo)
		version, _ := json.Marshal(c.protocol)
		b := append([]byte(`"`+mcp.MetaKeyClientCapabilities+`":`), caps...)
		if c.d.clientInfo.Name != "" {
			b = append(append(b, `,"`+mcp.MetaKeyClientInfo+`":`...), info...)
		}
		b = append(append(b, `,"`+mcp.MetaKeyProtocolVersion+`":`...), version...)
		c.meta = b
	})
	return c.meta
}

// withRequestMeta returns params (a JSON object without _meta) with the
// request's _meta first: requestMeta and the progress token.
func (c *Conn) withRequestMeta(params, progress json.RawMessage) json.RawMessage {
	meta := c.requestMeta()
	out := make([]byte, 0, len(params)+len(meta)+len(progress)+32)
	out = append(out, `{"_meta":{`...)
	out = append(out, meta...)
	if progress != nil {
		out = append(append(out, `,"progressToken":`...), progress...)
	}
	out = append(out, '}')
	rest := params
	if len(rest) > 0 && rest[0] == '{' {
		rest = rest[1:]
	}
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	if len(rest) == 0 {
		rest = []byte{'}'}
	}
	return append(out, rest...)
}

// rawTargetWith returns the direct client's target of a request with the
// request's own headers hdr (nil: the connection's target as it is), ok
// false when the Transport must send it.
func (c *Conn) rawTargetWith(hdr http.Header) (rawTarget, bool) {
	if c.direct == nil {
		return rawTarget{}, false
	}
	if len(hdr) == 0 {
		return *c.direct, true
	}
	head := make([]byte, 0, len(c.direct.head)+64)
	head = append(head, c.direct.head...)
	for k, vs := range hdr {
		if excludedHeaders[http.CanonicalHeaderKey(k)] || !validHeader(k, vs) || c.configures(k) {
			return rawTarget{}, false // net/http writes it otherwise, or a configured header wins
		}
		for _, v := range vs {
			head = append(head, k+": "+v+"\r\n"...)
		}
	}
	return rawTarget{addr: c.direct.addr, head: head}, true
}

// configures reports whether the backend's configured headers set k.
func (c *Conn) configures(k string) bool {
	for ck := range c.backend.Headers {
		if http.CanonicalHeaderKey(ck) == http.CanonicalHeaderKey(k) {
			return true
		}
	}
	return false
}

// statelessMeta is the per-connection state of the stateless forward.
type statelessMeta struct {
	metaOnce sync.Once
	meta     []byte
}
