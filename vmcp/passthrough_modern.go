package vmcp

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/backend"
)

// The pass-through hop for stateless (2026-07-28) client requests. A
// tools/call, resources/read or prompts/get that mcp-go's server would
// accept as it is (modernPost) is routed by the shared pool's view, sent
// on a pool slot picked as pool.call picks it (breaker, health, gate,
// bounded pool and their errors), through the slot's member (deadline,
// re-initialization, state, observer), with Conn.ForwardStateless on a
// stateless streamable-HTTP connection (Forward on a sessionful one,
// mcp-go's client on any other). The answer is what mcp-go's server
// would write for the result or the failure (modernResult). Anything
// else (tools/list and the other lists, a batch, the optimizer, a name
// the view does not route, a resource template, a tool whose parameters
// travel in headers, a request mcp-go would refuse) is left to mcp-go.

// passThroughModern answers req if the hop serves it, and reports whether
// it did.
func (g *Gateway) passThroughModern(w http.ResponseWriter, r *http.Request, req *rpcRequest) bool {
	key := passKey[req.Method]
	if key == "" || g.cfg.Optimizer.Enabled || req.JSONRPC != mcp.JSONRPC_VERSION || g.noModernHop.Load() {
		return false
	}
	id := strings.TrimSpace(string(req.ID))
	if id == "" || id == "null" || (id[0] != '"' && !isJSONNumber(id)) {
		return false
	}
	meta, ok := modernPost(r, req)
	if !ok {
		return false
	}
	name, err := stringParam(req.Params[key])
	if err != nil || !standardHeaders(r, req.Method, name) {
		return false // mcp-go says what is wrong
	}
	agg, err := g.pool.ensure(r.Context(), false)
	if err != nil || agg == nil {
		return false // mcp-go says it
	}
	var rt route
	switch req.Method {
	case "tools/call":
		rt, ok = agg.ToolRoutes[name]
		ok = ok && !g.paramHeaderTool(agg, name)
	case "prompts/get":
		rt, ok = agg.PromptRoutes[name]
	default:
		rt, ok = agg.ResourceRoutes[name]
	}
	if !ok {
		return false
	}
	params, progress, ok := modernParams(req, key, rt.Name, meta)
	if !ok {
		return false
	}
	g.passed.Add(1)
	result, be := g.forwardPool(r.Context(), rt.Backend, rt.Name, req.Method, params, progress)
	var out []byte
	switch {
	case be == nil:
		out = responseJSON(id, "result", result)
	case req.Method == "tools/call":
		res, _ := json.Marshal(toolErrorResult(be))
		res, _ = g.modernResult(req.Method, res)
		out = responseJSON(id, "result", res)
	default:
		e, _ := json.Marshal(map[string]any{"code": mcp.INTERNAL_ERROR, "message": be.Error(), "data": be.Data()})
		out = responseJSON(id, "error", e)
	}
	writeRPC(w, out)
	return true
}

// forwardPool sends one request to backendName on a slot of the shared
// pool, picked as pool.call picks it, through the slot's member, and
// returns its result as mcp-go's server would write it (modernResult:
// a result that asks for input fails the request, inside it, as mcp-go's
// client's does).
func (g *Gateway) forwardPool(ctx context.Context, backendName, name, method string, params, progress json.RawMessage) (json.RawMessage, *BackendError) {
	p := g.pool
	slot, be := p.pick(ctx, backendName, method)
	if be != nil {
		return nil, be
	}
	slot.inflight.Add(1)
	defer slot.inflight.Add(-1)
	var result json.RawMessage
	be = slot.m.doConn(ctx, method, g.cfg.Timeouts.Call, func(ctx context.Context, c *backend.Conn) (err error) {
		switch {
		case c.StatelessForwardable():
			result, err = c.ForwardStateless(ctx, method, name, params, progress)
		case c.Forwardable():
			result, err = c.Forward(ctx, method, withProgress(params, progress))
		default:
			result, err = typedCall(ctx, c.Client(), method, withProgress(params, progress))
		}
		if err == nil {
			result, err = g.modernResult(method, result)
		}
		return err
	})
	return result, be
}

// modernPost reports whether r is a stateless JSON POST that mcp-go's
// streamable-HTTP server takes as it is (its transport's checks:
// localhost protection, content type, era, Last-Event-ID, protocol
// version in header and _meta alike; its server's: client capabilities
// declared), and returns the request's _meta.
func modernPost(r *http.Request, req *rpcRequest) (*mcp.Meta, bool) {
	if rebinding(r) || r.Header.Get(mcp.HeaderLastEventID) != "" {
		return nil, false
	}
	mt, err := mediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, false
	}
	raw := req.Params["_meta"]
	if raw == nil {
		return nil, false
	}
	var meta *mcp.Meta
	if json.Unmarshal(raw, &meta) != nil || meta == nil {
		return nil, false
	}
	v := meta.ProtocolVersion()
	if !mcp.IsModernProtocol(v) || !mcp.IsValidProtocolVersion(v) || r.Header.Get(mcp.HeaderProtocolVersion) != v ||
		meta.ClientCapabilities() == nil {
		return nil, false
	}
	return meta, true
}

// standardHeaders reports whether the request's Mcp-Method and Mcp-Name
// headers agree with its body, as mcp-go's server requires
// (mcp.ValidateStandardHeaders).
func standardHeaders(r *http.Request, method, name string) bool {
	if r.Header.Get(mcp.HeaderMethod) != method {
		return false
	}
	h := r.Header.Get(mcp.HeaderName)
	decoded, ok := mcp.DecodeHeaderValue(h)
	return h != "" && ok && decoded == name
}

// rebinding reports whether mcp-go's server refuses r as a DNS rebinding
// attempt: a loopback listener reached with a Host that is not loopback
// (server.WithDisableLocalhostProtection is not set).
func rebinding(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && loopbackHost(local.String()) && !loopbackHost(r.Host)
}

// loopbackHost is mcp-go's isLoopbackHost: localhost or a loopback IP,
// with or without a port.
func loopbackHost(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// modernParams returns the params to send the backend: the client's
// with the backend's own name and without _meta, whose progress token is
// returned apart (nil: none).
func modernParams(req *rpcRequest, key, name string, meta *mcp.Meta) (params, progress json.RawMessage, ok bool) {
	if fm := forwardMeta(meta); fm != nil {
		var err error
		if progress, err = json.Marshal(fm.ProgressToken); err != nil {
			return nil, nil, false
		}
	}
	return backendParams(req.Params, key, name, nil), progress, true
}

// withProgress returns params (a JSON object without _meta) with a _meta
// holding only the progress token, if there is one.
func withProgress(params, progress json.RawMessage) json.RawMessage {
	if progress == nil {
		return params
	}
	out := make([]byte, 0, len(params)+len(progress)+32)
	out = append(out, `{"_meta":{"progressToken":`...)
	out = append(out, progress...)
	out = append(out, '}')
	if len(params) > 2 {
		out = append(out, ',')
		return append(out, params[1:]...)
	}
	return append(out, '}')
}

// paramHeaderTools are the tools of one view whose parameters travel in
// headers too (an x-mcp-header annotation, SEP-2243): mcp-go's server
// checks those headers, and its client sets them for the backend, so the
// hop leaves such tools to mcp-go.
type paramHeaderTools struct {
	agg   *aggregate
	names map[string]bool
}

// paramHeaderTool reports whether the view's tool name has parameters
// annotated with x-mcp-header. Worked out once per view.
func (g *Gateway) paramHeaderTool(agg *aggregate, name string) bool {
	set := g.paramHdrs.Load()
	if set == nil || set.agg != agg {
		set = &paramHeaderTools{agg: agg, names: map[string]bool{}}
		for _, t := range agg.Tools {
			if raw, err := json.Marshal(t.InputSchema); err != nil || bytes.Contains(raw, []byte("x-mcp-header")) ||
				bytes.Contains(t.RawInputSchema, []byte("x-mcp-header")) {
				set.names[t.Name] = true
			}
		}
		g.paramHdrs.Store(set)
	}
	return set.names[name]
}
