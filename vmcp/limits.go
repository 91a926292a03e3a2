package vmcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// reserveSessionSlot admits a sessionful initialize when fewer than
// limits.maxSessions sessions are open or opening, reserving a slot until
// release is called (the session is registered by then, or failed). ok is
// false at the limit.
func (g *Gateway) reserveSessionSlot() (release func(), ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.sessions)+g.openingSessions >= g.cfg.Limits.MaxSessions {
		return nil, false
	}
	g.openingSessions++
	return func() {
		g.mu.Lock()
		g.openingSessions--
		g.mu.Unlock()
	}, true
}

// sessionfulInitialize reports whether the request is an initialize
// that opens a session (not one of the stateless revision, which holds
// none).
func (req *rpcRequest) sessionfulInitialize() bool {
	if req.Method != string(mcp.MethodInitialize) {
		return false
	}
	var meta *mcp.Meta
	if raw := req.Params["_meta"]; raw != nil && json.Unmarshal(raw, &meta) != nil {
		return false
	}
	return !mcp.IsModernProtocol(meta.ProtocolVersion())
}

// refuseSessionLimit answers an initialize over limits.maxSessions: HTTP
// 503 with a Retry-After and a message that names the limit.
func (g *Gateway) refuseSessionLimit(w http.ResponseWriter) {
	g.logger.Warn("refusing a new session: limits.maxSessions reached", "maxSessions", g.cfg.Limits.MaxSessions)
	w.Header().Set("Retry-After", "5")
	http.Error(w, fmt.Sprintf("too many sessions: this gateway holds limits.maxSessions (%d) open sessions; "+
		"retry later (idle sessions close after timeouts.sessionIdle, %s)", g.cfg.Limits.MaxSessions, g.cfg.Timeouts.SessionIdle),
		http.StatusServiceUnavailable)
}

// maxToolNameBytes bounds a tool name (the MCP specification asks for at
// most 128 characters; this leaves room for long but sane names).
const maxToolNameBytes = 512

// toolNameProblem says what makes a backend's tool name unusable ("" when
// it is fine): empty, invalid UTF-8, control characters (NUL, newline…) or
// absurdly long.
func toolNameProblem(name string) string {
	switch {
	case name == "":
		return "the name is empty"
	case !utf8.ValidString(name) || strings.ContainsRune(name, utf8.RuneError):
		// JSON decoding turns invalid UTF-8 into U+FFFD.
		return "the name is not valid UTF-8 (or holds U+FFFD)"
	case len(name) > maxToolNameBytes:
		return fmt.Sprintf("the name is %d bytes long (at most %d)", len(name), maxToolNameBytes)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Sprintf("the name contains the control character %U", r)
		}
	}
	return ""
}

// checkTools applies the tool limits to one backend's tools/list: more than
// limits.maxToolsPerBackend tools refuses the backend (a partial catalogue
// would look complete to the client), and tools with unusable names are
// dropped, each with a logged reason naming the backend.
func (g *Gateway) checkTools(backend string, tools []mcp.Tool) ([]mcp.Tool, *BackendError) {
	if limit := g.cfg.Limits.MaxToolsPerBackend; len(tools) > limit {
		cause := fmt.Sprintf("invalid response: tools/list holds %d tools, more than limits.maxToolsPerBackend (%d)", len(tools), limit)
		g.logger.Warn("backend refused: too many tools", "backend", backend, "tools", len(tools), "maxToolsPerBackend", limit)
		return nil, &BackendError{Backend: backend, Op: "tools/list", Kind: KindInvalidResponse, Cause: cause, Err: errors.New(cause)}
	}
	if !slices.ContainsFunc(tools, func(t mcp.Tool) bool { return toolNameProblem(t.Name) != "" }) {
		// The list as it came (from the catalogue cache): sessions with
		// the same lists then share one aggregate (a copy made them build
		// and encode their own).
		return tools, nil
	}
	out := tools[:0:0]
	for _, t := range tools {
		if why := toolNameProblem(t.Name); why != "" {
			g.logger.Warn("dropping a tool with an unusable name", "backend", backend, "name", fmt.Sprintf("%q", t.Name), "reason", why)
			continue
		}
		out = append(out, t)
	}
	return out, nil
}
