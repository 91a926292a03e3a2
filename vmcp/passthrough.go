package vmcp

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/backend"
)

// The pass-through hop. A legacy session's tools/call, resources/read and
// prompts/get are forwarded without mcp-go's server or client: only the
// envelope is decoded (id, method, params' name or uri), the name and id
// are rewritten, and the backend's result is written back as it came. The
// backend request goes through the member like any other (gate, deadline,
// re-initialization, state, observer); backend.Conn.Forward sends it on
// the gateway's HTTP transport and takes a plain answer itself, handing
// any other to the connection's transport and validators, so every
// guarantee of the mcp-go path holds. Anything else (another method, a batch, a
// stateless request, the optimizer, a name the view does not route, a
// resource template) is left to mcp-go, which answers it as before.

// rpcRequest is the envelope of one client request.
type rpcRequest struct {
	JSONRPC string                     `json:"jsonrpc"`
	ID      json.RawMessage            `json:"id"`
	Method  string                     `json:"method"`
	Params  map[string]json.RawMessage `json:"params"`
}

// passKey is the params field a forwarded method is routed by.
var passKey = map[string]string{"tools/call": "name", "resources/read": "uri", "prompts/get": "name", "tools/list": ""}

// passThrough answers req if the hop serves it, and reports whether it did.
// A tools/list (without a cursor: mcp-go pages nothing here) is answered
// from the view's tool list, encoded once per view (aggregate.toolsListJSON).
func (g *Gateway) passThrough(w http.ResponseWriter, r *http.Request, req *rpcRequest) bool {
	key, ok := passKey[req.Method]
	if !ok || g.cfg.Optimizer.Enabled || req.JSONRPC != mcp.JSONRPC_VERSION || !legacyPost(r) {
		return false
	}
	s := g.session(r.Header.Get(mcp.HeaderSessionID))
	id := strings.TrimSpace(string(req.ID))
	if s == nil || id == "" || id == "null" || (id[0] != '"' && !isJSONNumber(id)) {
		return false
	}
	if req.Method == string(mcp.MethodToolsList) {
		list := s.agg.Load().toolsListJSON()
		if len(req.Params) > 0 || list == nil { // a cursor or _meta: mcp-go reads them
			return false
		}
		s.touch()
		g.passed.Add(1)
		writeRPC(w, responseJSON(id, "result", list))
		return true
	}
	rt, params, ok := s.passRoute(req, key)
	if !ok {
		return g.answerDownTool(w, s, id, req)
	}
	slot := &cancelSlot{}
	if _, dup := s.passing.LoadOrStore(id, slot); dup {
		return false // an id already in flight: mcp-go says what it says
	}
	defer s.passing.Delete(id)
	s.touch()
	g.passed.Add(1)
	result, be := s.forward(context.WithValue(r.Context(), cancelSlotKey{}, slot), rt.Backend, req.Method, params)
	var out []byte
	switch {
	case be == nil:
		out = responseJSON(id, "result", result)
	case req.Method == "tools/call":
		res, _ := json.Marshal(toolErrorResult(be))
		out = responseJSON(id, "result", res)
	default:
		e, _ := json.Marshal(map[string]any{"code": mcp.INTERNAL_ERROR, "message": be.Error(), "data": be.Data()})
		out = responseJSON(id, "error", e)
	}
	writeRPC(w, out)
	return true
}

// answerDownTool answers a tools/call of a tool the view does not route
// because its backend is out of it (Session.downTool) with an error
// result naming the backend, and reports whether it did (else mcp-go
// answers, e.g. "tool not found" for a name no backend has).
func (g *Gateway) answerDownTool(w http.ResponseWriter, s *Session, id string, req *rpcRequest) bool {
	if req.Method != "tools/call" {
		return false
	}
	name, err := stringParam(req.Params["name"])
	if err != nil {
		return false
	}
	down, ok := s.downTool(name)
	if !ok {
		return false
	}
	s.touch()
	res, _ := json.Marshal(toolErrorResult(down.Err))
	writeRPC(w, responseJSON(id, "result", res))
	return true
}

// writeRPC writes one JSON-RPC response as mcp-go's server does for a
// request answered without a stream.
func writeRPC(w http.ResponseWriter, out []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType // canonical keys: what Set stores, without its work
	h["Content-Length"] = []string{strconv.Itoa(len(out))}
	_, _ = w.Write(out)
}

// jsonContentType is the Content-Type of every answer writeRPC writes
// (net/http only reads it).
var jsonContentType = []string{"application/json"}

// legacyPost reports whether r is a sessionful (2025-11-25 era) JSON POST,
// as mcp-go's server would take it.
func legacyPost(r *http.Request) bool {
	mt, err := mediaType(r.Header.Get("Content-Type"))
	v := r.Header.Get(mcp.HeaderProtocolVersion)
	return err == nil && mt == "application/json" && (v == "" || (mcp.IsValidProtocolVersion(v) && !mcp.IsModernProtocol(v)))
}

func isJSONNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// responseJSON is a JSON-RPC response with member field ("result" or
// "error") holding raw.
func responseJSON(id, field string, raw []byte) []byte {
	out := make([]byte, 0, len(raw)+len(id)+40)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, `,"`...)
	out = append(out, field...)
	out = append(out, `":`...)
	out = append(out, raw...)
	return append(out, "}\n"...)
}

// passRoute finds the backend of req in the session's view and returns
// the params to send it: the backend's own name, and of the client's
// _meta only the progress token (forwardMeta). ok is false when the view
// does not route it, or the request belongs to the stateless revision.
func (s *Session) passRoute(req *rpcRequest, key string) (rt route, params json.RawMessage, ok bool) {
	name, err := stringParam(req.Params[key])
	if err != nil {
		return route{}, nil, false
	}
	agg := s.agg.Load()
	switch req.Method {
	case "tools/call":
		rt, ok = agg.ToolRoutes[name]
	case "prompts/get":
		rt, ok = agg.PromptRoutes[name]
	default:
		rt, ok = agg.ResourceRoutes[name]
	}
	if !ok {
		return route{}, nil, false
	}
	var meta json.RawMessage
	if raw := req.Params["_meta"]; raw != nil {
		var m *mcp.Meta
		if json.Unmarshal(raw, &m) != nil || mcp.IsModernProtocol(m.ProtocolVersion()) {
			return route{}, nil, false
		}
		if fm := forwardMeta(m); fm != nil {
			var err error
			if meta, err = json.Marshal(fm); err != nil {
				return route{}, nil, false
			}
		}
	}
	return rt, backendParams(req.Params, key, rt.Name, meta), true
}

// forward sends one request to backend through the session's member, on
// the pass-through hop when the connection allows it, else through
// mcp-go's client (a backend that speaks only the stateless revision).
func (s *Session) forward(ctx context.Context, backendName, method string, params json.RawMessage) (json.RawMessage, *BackendError) {
	m := s.members[backendName]
	if m == nil {
		return nil, &BackendError{Backend: backendName, Op: method, Kind: KindClosed, Cause: "not part of this session"}
	}
	var result json.RawMessage
	be := m.doConn(ctx, method, s.g.cfg.Timeouts.Call, func(ctx context.Context, c *backend.Conn) (err error) {
		if c.Forwardable() {
			result, err = c.Forward(ctx, method, params)
		} else {
			result, err = typedCall(ctx, c.Client(), method, params)
		}
		return err
	})
	return result, be
}

// typedCall makes the request through mcp-go's client, which adds what
// the stateless revision needs to every request, and encodes its result.
func typedCall(ctx context.Context, c *client.Client, method string, params json.RawMessage) (json.RawMessage, error) {
	var res any
	var err error
	switch method {
	case "tools/call":
		var p mcp.CallToolParams
		if err = json.Unmarshal(params, &p); err == nil {
			res, err = c.CallTool(ctx, mcp.CallToolRequest{Params: p})
		}
	case "prompts/get":
		var p mcp.GetPromptParams
		if err = json.Unmarshal(params, &p); err == nil {
			res, err = c.GetPrompt(ctx, mcp.GetPromptRequest{Params: p})
		}
	default:
		var p mcp.ReadResourceParams
		if err = json.Unmarshal(params, &p); err == nil {
			res, err = c.ReadResource(ctx, mcp.ReadResourceRequest{Params: p})
		}
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// cancelPassing ends the pass-through call the client's
// notifications/cancelled names, if it is one (mcp-go cancels its own).
func (g *Gateway) cancelPassing(r *http.Request, req *rpcRequest) {
	s := g.session(r.Header.Get(mcp.HeaderSessionID))
	if s == nil {
		return
	}
	if slot, ok := s.passing.Load(strings.TrimSpace(string(req.Params["requestId"]))); ok {
		slot.(*cancelSlot).fire()
	}
}

// cancelSlot is how a client's notifications/cancelled reaches a
// pass-through call: the member's attempt puts the cancel function of
// the request's own context there (setCancel), so the call needs no
// cancelable context of its own. A cancel that comes first is kept and
// applied when the function arrives.
type cancelSlot struct {
	mu        sync.Mutex
	cancel    context.CancelFunc
	cancelled bool
}

type cancelSlotKey struct{}

// setCancel hands the slot of ctx, if it has one, the function that
// cancels the request (calling it at once if the client has already
// cancelled).
func setCancel(ctx context.Context, cancel context.CancelFunc) {
	slot, ok := ctx.Value(cancelSlotKey{}).(*cancelSlot)
	if !ok {
		return
	}
	slot.mu.Lock()
	slot.cancel = cancel
	cancelled := slot.cancelled
	slot.mu.Unlock()
	if cancelled {
		cancel()
	}
}

// fire cancels the call, now or when its cancel function arrives.
func (s *cancelSlot) fire() {
	s.mu.Lock()
	s.cancelled = true
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
