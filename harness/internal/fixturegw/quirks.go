package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// quirks are front-side behaviours of real gateways that fixtures c and d
// reproduce (see the package doc).
type quirks struct {
	// noResources: resources not advertised at initialize, every
	// resources/* request answered -32601.
	noResources bool
	// noPrompts: prompts not advertised, every prompts/* request
	// answered -32601.
	noPrompts bool
	// dropFor: after an error answer for a backend, its tools and
	// prompts are dropped for this long: calls to them are answered
	// "tool 'NAME' not found" (no backend named) without reaching it,
	// and the lists leave them out.
	dropFor  time.Duration
	backends []string
	// agreeOld: every client is agreed revision 2025-06-18, however new
	// the one it asks for (server/discover answered -32601).
	agreeOld bool
	// keepBroken: after an error answer for a backend in a client session,
	// that session's backend client is never rebuilt: every later call
	// of the backend in the session answers "connection closed: client is
	// closing" (no backend named); a new session works.
	keepBroken bool
	broken     map[[2]string]bool // (session, backend)
	// dropColliding: a backend's tools whose bare names (the name less
	// the backend's prefix, prefixFormat) another backend listed first
	// are left out of tools/list, as a gateway whose tool table has a
	// unique bare-name column does.
	dropColliding bool
	prefixFormat  string
	// detach: a client's request is served on, backend call included,
	// after the client cancels it or goes away (its context never ends),
	// and a client's notifications/cancelled is accepted but never
	// forwarded: the gateway does not cancel backend calls.
	detach bool
	// rpcErrors: every error the gateway reports for a backend on
	// tools/call is answered as a JSON-RPC error with code rpcErrorCode
	// (toRPCError); backendHosts (backend → host:port) give its message
	// the address of a reset connection.
	rpcErrors    bool
	rpcErrorCode int
	backendHosts map[string]string
	// cancelOneIn: of the client's cancellations (a notifications/cancelled,
	// or a request it abandons), only the 1st of every cancelOneIn is
	// acted on (cancelActs); the others are swallowed as detach does.
	cancelOneIn int
	cancels     int                   // cancellations seen
	cancelTurns map[string]cancelTurn // (session, request id) → decision
	// refuse: the protocol revisions refused with -32022 (revisions.go),
	// though server/discover still lists them.
	refuse revisionsFlag

	mu      sync.Mutex
	dropped map[string]time.Time // backend → until
}

// oldRevision is the revision an agreeOld front agrees with every client.
const oldRevision = "2025-06-18"

// request is what the front reads of an MCP request.
type request struct {
	session string
	Method  string          `json:"method"`
	ID      json.RawMessage `json:"id"`
	Params  struct {
		Name            string          `json:"name"`
		URI             string          `json:"uri"`
		RequestID       json.RawMessage `json:"requestId"`       // notifications/cancelled
		ProtocolVersion string          `json:"protocolVersion"` // initialize
		Meta            struct {
			ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"` // a 2026-07-28 request
		} `json:"_meta"`
	} `json:"params"`
	backend string
	// protocol is the request's Mcp-Protocol-Version header.
	protocol string
}

// readRequest reads (and restores) a POST's JSON-RPC request.
func (q *quirks) readRequest(r *http.Request) request {
	var req request
	if r.Method != http.MethodPost || r.Body == nil {
		return req
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil || json.Unmarshal(body, &req) != nil {
		return request{}
	}
	req.backend = q.addressed(req.Params.Name, req.Params.URI)
	req.session = r.Header.Get("Mcp-Session-Id")
	req.protocol = r.Header.Get("Mcp-Protocol-Version")
	return req
}

// addressed is the backend a request's tool, prompt or resource belongs
// to ("" when none): by prefix or suffix of the name, or the URI's host.
func (q *quirks) addressed(name, uri string) string {
	for _, b := range q.backends {
		if name != "" && (strings.HasPrefix(name, b+"_") || strings.HasSuffix(name, "_"+b)) {
			return b
		}
		if uri != "" && strings.Contains(uri, "://"+b+"/") {
			return b
		}
	}
	return ""
}

// answer answers req itself when a quirk says so, and reports whether it
// did.
func (q *quirks) answer(w http.ResponseWriter, req request) bool {
	switch {
	case q.detach && req.Method == "notifications/cancelled":
		w.WriteHeader(http.StatusAccepted)
		return true
	case q.cancelOneIn > 0 && req.Method == "notifications/cancelled" && !q.cancelActs(req.session, req.Params.RequestID):
		w.WriteHeader(http.StatusAccepted)
		return true
	case refusedRevision(q.refuse, req) != "":
		v := refusedRevision(q.refuse, req)
		writeRPCError(w, req.ID, unsupportedVersion, "Unsupported protocol version: "+v)
		return true
	case q.agreeOld && req.Method == "server/discover":
		writeRPCError(w, req.ID, -32601, "Method not found")
		return true
	case q.noResources && strings.HasPrefix(req.Method, "resources/"), q.noPrompts && strings.HasPrefix(req.Method, "prompts/"):
		writeRPCError(w, req.ID, -32601, "Method not found")
		return true
	case q.keepBroken && req.backend != "" && q.isBroken(req.session, req.backend):
		writeRPCError(w, req.ID, -32603, "connection closed: client is closing: an earlier call failed")
		return true
	case (req.Method == "tools/call" || req.Method == "prompts/get") && q.isDropped(req.backend):
		kind := "tool"
		if req.Method == "prompts/get" {
			kind = "prompt"
		}
		writeRPCError(w, req.ID, -32602, fmt.Sprintf("%s '%s' not found", kind, req.Params.Name))
		return true
	}
	return false
}

// answered notes the gateway's answer to req: an error answer for a
// backend drops it for dropFor.
func (q *quirks) answered(req request, isError bool) {
	if !isError || req.backend == "" {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.keepBroken && req.session != "" {
		if q.broken == nil {
			q.broken = map[[2]string]bool{}
		}
		q.broken[[2]string{req.session, req.backend}] = true
	}
	if q.dropFor <= 0 {
		return
	}
	if q.dropped == nil {
		q.dropped = map[string]time.Time{}
	}
	q.dropped[req.backend] = time.Now().Add(q.dropFor)
}

// withoutColliding leaves out of a tools list every tool whose bare name
// an earlier tool of another backend has.
func (q *quirks) withoutColliding(tools []any) []any {
	first := map[string]string{} // bare name → backend
	return slices.DeleteFunc(tools, func(e any) bool {
		m, _ := e.(map[string]any)
		name, _ := m["name"].(string)
		backend := q.addressed(name, "")
		bare := strings.TrimPrefix(name, strings.ReplaceAll(q.prefixFormat, "{backend}", backend))
		if b, seen := first[bare]; seen && b != backend {
			return true
		}
		first[bare] = backend
		return false
	})
}

func (q *quirks) isBroken(session, backend string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.broken[[2]string{session, backend}]
}

func (q *quirks) isDropped(backend string) bool {
	if backend == "" {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return time.Now().Before(q.dropped[backend])
}

// rewriteResult applies the quirks to a result: no resources capability;
// dropped backends' tools and prompts left out of the lists.
func (q *quirks) rewriteResult(res map[string]any) {
	if caps, ok := res["capabilities"].(map[string]any); ok {
		if q.noResources {
			delete(caps, "resources")
		}
		if q.noPrompts {
			delete(caps, "prompts")
		}
	}
	if _, ok := res["protocolVersion"].(string); ok && q.agreeOld {
		res["protocolVersion"] = oldRevision
	}
	if tools, ok := res["tools"].([]any); ok && q.dropColliding {
		res["tools"] = q.withoutColliding(tools)
	}
	for _, key := range []string{"tools", "prompts"} {
		list, ok := res[key].([]any)
		if !ok || q.dropFor <= 0 {
			continue
		}
		res[key] = slices.DeleteFunc(list, func(e any) bool {
			m, _ := e.(map[string]any)
			name, _ := m["name"].(string)
			return q.isDropped(q.addressed(name, ""))
		})
	}
}

// errorAnswer reports whether a JSON-RPC message is an error answer: an
// error, or a result with isError.
func errorAnswer(body []byte) bool {
	var m struct {
		Error  json.RawMessage `json:"error"`
		Result struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	return json.Unmarshal(body, &m) == nil && (len(m.Error) > 0 && string(m.Error) != "null" || m.Result.IsError)
}

// errorSeen is a rewriter's fn wrapper that remembers an error answer.
type errorSeen struct {
	fn   func([]byte) []byte
	seen atomic.Bool
}

func (e *errorSeen) rewrite(body []byte) []byte {
	if errorAnswer(body) {
		e.seen.Store(true)
	}
	return e.fn(body)
}

func writeRPCError(w http.ResponseWriter, id json.RawMessage, code int, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
