package vmcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Version is reported as the gateway's serverInfo.version.
const Version = "0.1.0"

var errUnknownSession = errors.New("unknown or closed session")

// newMCPServer builds the client-facing MCP server. Tools, resources and
// templates live in mcp-go's per-session stores (set when a session starts,
// or from the pool for stateless requests); prompts are registered globally
// and filtered per request.
func (g *Gateway) newMCPServer() *server.MCPServer {
	hooks := &server.Hooks{}
	hooks.AddOnRequestInitialization(g.onRequest)
	return server.NewMCPServer(g.cfg.Name, Version,
		server.WithToolCapabilities(g.cfg.Notifications.ListChanged),
		server.WithResourceCapabilities(false, false),
		server.WithPromptCapabilities(false),
		server.WithHooks(hooks),
		server.WithPromptFilter(g.promptFilter),
		server.WithRecovery(),
		server.WithResourceRecovery(),
	)
}

// onRequest runs before mcp-go handles any request. A sessionful
// initialize opens the gateway session (its error fails the initialize);
// a stateless request gets the pool's view.
func (g *Gateway) onRequest(ctx context.Context, _ any, message any) error {
	sess := server.ClientSessionFromContext(ctx)
	if sess == nil {
		return nil
	}
	id := sess.SessionID()
	if id != "" {
		// A request of an open session: mcp-go gives an initialize a
		// newly generated id, which no session has yet, so there is
		// nothing more to do (and nothing to decode).
		if s := g.session(id); s != nil {
			s.touch()
			return nil
		}
	}
	raw, _ := message.(json.RawMessage) // what MCPServer.HandleMessage passes
	var msg struct {
		Method string `json:"method"`
		Params struct {
			ProtocolVersion string    `json:"protocolVersion"`
			Meta            *mcp.Meta `json:"_meta"`
		} `json:"params"`
	}
	_ = json.Unmarshal(raw, &msg)
	modern := mcp.IsModernProtocol(msg.Params.Meta.ProtocolVersion())

	switch {
	case msg.Method == string(mcp.MethodInitialize) && !modern && id != "":
		s, err := g.openSession(ctx, id, msg.Params.ProtocolVersion)
		if err != nil {
			return err
		}
		if !g.addSession(s) {
			s.Close()
			return errors.New("gateway is shutting down")
		}
		s.viewMu.Lock()
		s.mcpSess = sess
		g.applyView(sess, s, s.agg.Load())
		s.viewMu.Unlock()
		return nil
	case id == "":
		retry := slices.Contains([]mcp.MCPMethod{mcp.MethodToolsList, mcp.MethodResourcesList,
			mcp.MethodResourcesTemplatesList, mcp.MethodPromptsList, mcp.MethodServerDiscover}, mcp.MCPMethod(msg.Method))
		if _, err := g.pool.ensure(ctx, retry); err != nil {
			if msg.Method == string(mcp.MethodServerDiscover) || g.installOptimizerOnly(sess, msg.Method) {
				return nil // discovery, and find_tool (which says so), do not need backends
			}
			return err
		}
		// The pool's latest view and its version, read together and
		// applied under one lock: a concurrent rebuild cannot have an
		// older view marked current.
		// The common case, the view already installed, takes no lock.
		if !retry && g.pool.version.Load() == g.poolApplied.Load() {
			return nil
		}
		g.poolApplyMu.Lock()
		defer g.poolApplyMu.Unlock()
		if agg, v := g.pool.snapshot(); agg != nil && (g.poolApplied.Load() != v || retry) {
			g.applyView(sess, g.pool, agg)
			g.poolApplied.Store(v)
		}
		return nil
	}
	return nil
}

// viewFor returns the caller and aggregate of the request's session.
func (g *Gateway) viewFor(ctx context.Context) (caller, *aggregate) {
	sess := server.ClientSessionFromContext(ctx)
	if sess == nil {
		return nil, nil
	}
	id := sess.SessionID()
	if id == "" {
		return g.pool, g.pool.aggregate()
	}
	s := g.session(id)
	if s == nil {
		return nil, nil
	}
	return s, s.agg.Load()
}

// sessionIDs is the SessionIdManager of the client-facing server: ids are
// random, valid while their gateway session is open, and DELETE closes the
// gateway session.
type sessionIDs struct{ g *Gateway }

func (m sessionIDs) Generate() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "vmcp-" + hex.EncodeToString(b[:])
}

func (m sessionIDs) Validate(id string) (isTerminated bool, err error) {
	if id == "" {
		return false, errors.New("missing session id")
	}
	if m.g.session(id) != nil {
		return false, nil
	}
	if m.g.wasClosed(id) {
		return true, nil
	}
	return false, fmt.Errorf("unknown session %q", id)
}

func (m sessionIDs) Terminate(id string) (isNotAllowed bool, err error) {
	m.g.closeSessionAsync(id)
	return false, nil
}
