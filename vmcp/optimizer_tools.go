package vmcp

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/optimizer"
)

// Names of the optimizer's two tools.
const (
	// FindToolName is the optimizer's search tool.
	FindToolName = "find_tool"
	// CallToolName is the optimizer's routing tool.
	CallToolName = "call_tool"
)

// MsgNoBackend starts the message find_tool returns when the caller's view
// holds no backend at all.
const MsgNoBackend = "no backend is available"

// FindToolResult is find_tool's result, as JSON text and structuredContent.
type FindToolResult struct {
	// Tools are full tool definitions, best match first, under the names
	// call_tool accepts.
	Tools []mcp.Tool `json:"tools"`
	// TokenMetrics compares Tools with the caller's whole tool list.
	TokenMetrics optimizer.TokenMetrics `json:"token_metrics"`
	// Message explains an empty result.
	Message string `json:"message,omitempty"`
}

// optimizerTools are the two tools a session sees when the optimizer is on.
// Their handlers resolve the caller's view per request (viewFor), so the
// same definitions serve legacy sessions and the stateless pool.
func (g *Gateway) optimizerTools() map[string]server.ServerTool {
	find := mcp.NewTool(FindToolName,
		mcp.WithDescription("Search the tools available through this gateway. Describe what you want to do; "+
			"returns the best-matching tool definitions (name, description, input schema), which you then "+
			"invoke with call_tool."),
		mcp.WithString("tool_description", mcp.Required(),
			mcp.Description("Natural-language description of the task the tool should perform")),
		mcp.WithArray("tool_keywords", mcp.WithStringItems(),
			mcp.Description("Optional keywords (service, object or action names) that the tool should match")),
	)
	call := mcp.NewTool(CallToolName,
		mcp.WithDescription("Call a tool found with find_tool, by its exact name, with its arguments."),
		mcp.WithString("tool_name", mcp.Required(),
			mcp.Description("Exact name of the tool, as returned by find_tool")),
		// Required as in toolhive's call_tool schema; a call without it is
		// still served, as a call with an empty object.
		mcp.WithObject("parameters", mcp.Required(),
			mcp.Description("Arguments of the tool, matching its input schema (an empty object for none)")),
	)
	return map[string]server.ServerTool{
		FindToolName: {Tool: find, Handler: g.findTool},
		CallToolName: {Tool: call, Handler: g.callTool},
	}
}

// attachOptimizer makes agg searchable for its owner before the owner's
// first request. A session has one registered view at a time: the new one
// replaces the previous one at once (a concurrent find_tool uses the old
// one until then, never none), and the old one's segments are released
// once the new one is indexed, so a re-index after a backend left or
// rejoined shares every unchanged segment instead of rebuilding it. The
// session's view is released when the session closes (one callback per
// session, however often it re-indexes). The pool's view replaces the
// previous pool view.
//
// It is called by applyView (with an aggregate, never nil), for a session
// with s.viewMu held, which makes s.hidden safe to read.
func (g *Gateway) attachOptimizer(target caller, agg *aggregate) {
	st := g.opt
	switch t := target.(type) {
	case *Session:
		nv, old := st.setSessionView(t, agg, g.sessionNoBackend(t))
		ctx, cancel := context.WithTimeout(t.ctx, g.cfg.Timeouts.List)
		defer cancel()
		nv.ensure(ctx)
		if old != nil {
			old.release()
		}
	case *pool:
		ctx, cancel := context.WithTimeout(t.ctx, g.cfg.Timeouts.List)
		defer cancel()
		st.poolView(agg).ensure(ctx)
	}
}

// sessionNoBackend returns find_tool's message for a session whose view
// holds no backend at all (every backend failed at start or left it while
// unavailable), or "" when at least one backend is in the view. Called with
// s.viewMu held.
func (g *Gateway) sessionNoBackend(s *Session) string {
	var causes []string
	for _, name := range s.order {
		m := s.members[name]
		if s.hidden[name] {
			causes = append(causes, unhealthyText(name, g.whyLeft(name)))
			continue
		}
		m.mu.Lock()
		connected, lastErr := m.listed, m.lastErr
		m.mu.Unlock()
		if connected {
			return ""
		}
		if lastErr != nil {
			causes = append(causes, lastErr.Error())
		}
	}
	if len(causes) == 0 {
		return MsgNoBackend
	}
	return MsgNoBackend + ": " + strings.Join(causes, "; ")
}

// whyLeft says why a backend left live sessions' views.
func (g *Gateway) whyLeft(name string) string {
	if why, ok := g.res.unavailable(name); ok {
		return why
	}
	return "left the session"
}

// poolUnavailable returns the backends of the pool's view that are
// unavailable now, each with its BackendError text. A stateless request is
// a session of its own: what it can find and call is decided when it
// arrives, as for a session when it is created.
func (g *Gateway) poolUnavailable(v *optView) map[string]string {
	out := map[string]string{}
	for _, b := range v.backends {
		if why, ok := g.res.unavailable(b); ok {
			out[b] = unhealthyText(b, why)
		}
	}
	return out
}

// installOptimizerOnly gives a stateless request the optimizer's tools when
// the pool has no backend at all, so that find_tool can say so; it reports
// whether the request may go on without backends.
func (g *Gateway) installOptimizerOnly(sess server.ClientSession, method string) bool {
	if !g.cfg.Optimizer.Enabled || (method != string(mcp.MethodToolsList) && method != string(mcp.MethodToolsCall)) {
		return false
	}
	if st, ok := sess.(server.SessionWithTools); ok {
		st.SetSessionTools(g.optimizerTools())
	}
	return true
}

// findTool serves find_tool: BM25 search over the caller's own tools.
func (g *Gateway) findTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.GetArguments()
	desc, ok := args["tool_description"].(string)
	if !ok || strings.TrimSpace(desc) == "" {
		return mcp.NewToolResultError("find_tool: tool_description is required and must be a non-empty string"), nil
	}
	var keywords []string
	switch kw := args["tool_keywords"].(type) {
	case nil:
	case string: // lenient: toolhive's older clients send one space-separated string
		keywords = strings.Fields(kw)
	case []any:
		for _, k := range kw {
			s, ok := k.(string)
			if !ok {
				return mcp.NewToolResultError("find_tool: tool_keywords must be an array of strings"), nil
			}
			keywords = append(keywords, s)
		}
	default:
		return mcp.NewToolResultError("find_tool: tool_keywords must be an array of strings"), nil
	}

	v, why := g.optimizerView(ctx)
	if v == nil {
		return findResult(FindToolResult{Tools: []mcp.Tool{}, Message: why}), nil
	}
	allowed, baseline := v.allowed, v.baseline
	if v.pool {
		if gone := g.poolUnavailable(v); len(gone) > 0 {
			allowed, baseline = v.without(gone)
			if len(allowed) == 0 && len(gone) == len(v.backends) {
				why = MsgNoBackend + ": " + joinSorted(gone)
			}
		}
	}
	if len(allowed) == 0 {
		return findResult(FindToolResult{Tools: []mcp.Tool{}, Message: why}), nil
	}
	v.ensure(ctx)
	st := v.st
	matches, err := st.ix.Search(ctx, optimizer.Query{Description: desc, Keywords: keywords}, allowed, st.maxResults)
	if err != nil {
		return mcp.NewToolResultError("find_tool: search failed: " + err.Error()), nil
	}
	out := FindToolResult{Tools: make([]mcp.Tool, 0, len(matches))}
	for _, m := range matches {
		out.Tools = append(out.Tools, m.Tool)
	}
	out.TokenMetrics = optimizer.NewTokenMetrics(baseline, optimizer.EstimateTokens(out.Tools))
	if len(out.Tools) == 0 {
		out.Message = "no tool matches the description; try other words or keywords"
	}
	g.logger.Debug("find_tool", "query", desc, "keywords", keywords, "results", len(out.Tools), "allowed", len(allowed))
	return findResult(out), nil
}

func findResult(r FindToolResult) *mcp.CallToolResult {
	text, err := json.Marshal(r)
	if err != nil {
		return mcp.NewToolResultError("find_tool: encoding the result: " + err.Error())
	}
	return mcp.NewToolResultStructured(r, string(text))
}

// callTool serves call_tool: the named tool of the caller's view, through
// the same path as a direct tools/call (deadline, gate, observer, state,
// re-initialization, errors naming the backend).
func (g *Gateway) callTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.GetArguments()
	name, ok := args["tool_name"].(string)
	if !ok || name == "" {
		return mcp.NewToolResultError("call_tool: tool_name is required and must be a non-empty string"), nil
	}
	var params map[string]any
	switch p := args["parameters"].(type) {
	case nil:
	case map[string]any:
		params = p
	default:
		return mcp.NewToolResultError(fmt.Sprintf("call_tool: parameters must be an object, got %s", jsonType(p))), nil
	}
	target, agg := g.viewFor(ctx)
	if agg == nil {
		return mcp.NewToolResultError("tool not found: " + name + " (" + MsgNoBackend + ")"), nil
	}
	r, ok := agg.ToolRoutes[name]
	if !ok {
		if s, isSession := target.(*Session); isSession {
			if down, ok := s.downTool(name); ok { // the backend's tool, out of the view while it is unavailable or never connected
				why := down.Err.Error()
				if gone, unavailable := g.res.unavailable(down.Name); unavailable {
					why = unhealthyText(down.Name, gone)
				} else if down.Hidden {
					why = unhealthyText(down.Name, g.whyLeft(down.Name))
				}
				return mcp.NewToolResultError("tool not found: " + name + " (" + why + ")"), nil
			}
		}
		if _, stateless := target.(*pool); stateless {
			if why, out := g.outOfViewOwner(name, agg); out { // a stateless view leaves a backend it cannot reach out
				return mcp.NewToolResultError("tool not found: " + name + " (" + why + ")"), nil
			}
		}
		return mcp.NewToolResultError("tool not found: " + name), nil
	}
	if _, stateless := target.(*pool); stateless {
		if why, gone := g.res.unavailable(r.Backend); gone {
			return mcp.NewToolResultError("tool not found: " + name + " (" + unhealthyText(r.Backend, why) + ")"), nil
		}
	}
	return toolHandler(target, r)(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name: name, Arguments: params, Meta: req.Params.Meta}})
}

// outOfViewOwner reports, for a tool name of a backend the view agg
// leaves out (by its prefix, when tools are prefixed), the error text
// that says why: unavailable (unhealthy, its circuit open), or not
// connected. A call of its tool is told which backend is down, not only
// that the tool is not found.
func (g *Gateway) outOfViewOwner(name string, agg *aggregate) (why string, ok bool) {
	inView := map[string]bool{}
	for _, r := range agg.ToolRoutes {
		inView[r.Backend] = true
	}
	names := make([]string, len(g.cfg.Backends))
	for i, b := range g.cfg.Backends {
		names[i] = b.Name
	}
	b, ok := prefixOwner(g.cfg.Aggregation, name, names, func(n string) bool { return !inView[n] })
	if !ok {
		return "", false
	}
	if why, gone := g.res.unavailable(b); gone {
		return unhealthyText(b, why), true
	}
	return (&BackendError{Backend: b, Op: "tools/call", Kind: KindClosed, Cause: "not connected"}).Error(), true
}

// unhealthyText is the error text of a backend left out of the caller's
// view because it is unavailable (why).
func unhealthyText(backend, why string) string {
	return (&BackendError{Backend: backend, Kind: KindUnhealthy, Cause: why}).Error()
}

func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case float64, int, int64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

// optimizerView returns the optimizer view of the request's caller (nil
// when there is none) and the message find_tool gives when the view holds
// no tool.
func (g *Gateway) optimizerView(ctx context.Context) (*optView, string) {
	st := g.opt
	sess := server.ClientSessionFromContext(ctx)
	if sess == nil {
		return nil, MsgNoBackend + ": no client session"
	}
	if sess.SessionID() == "" {
		agg := g.pool.aggregate()
		if agg == nil {
			return nil, noBackendMessage(g.pool.noBackend())
		}
		return st.poolView(agg), msgNoTool
	}
	var v *optView
	if s := g.session(sess.SessionID()); s != nil {
		v = st.sessionView(s)
	}
	if v == nil {
		return nil, MsgNoBackend + ": the session is closed"
	}
	return v, cmp.Or(v.noBackend, msgNoTool)
}

// noBackendMessage is find_tool's message for a *NoBackendError: every
// backend and why it is not available.
func noBackendMessage(err error) string {
	var nb *NoBackendError
	if !errors.As(err, &nb) || len(nb.Errs) == 0 {
		return MsgNoBackend
	}
	return MsgNoBackend + ": " + joinErrors(nb.Errs)
}

// msgNoTool is find_tool's message when the caller's backends offer no tool.
const msgNoTool = "no tool is available from the connected backends"

// optimizerState is the gateway's one shared index and the views that
// search it.
//
// Documents are indexed per segment: one backend's tools as one view
// exposes them (after prefixing), keyed "backend@fingerprint". Views with
// the same tools from a backend share a segment; a segment is reference
// counted and leaves the index when its last view is dropped, so a session
// keeps searching exactly the definitions it was created with even if the
// backend's tools change for later sessions.
type optimizerState struct {
	ix         *optimizer.Index
	maxResults int
	logger     *slog.Logger

	mu       sync.Mutex
	segs     map[string]*segment
	sessions map[*Session]*optView // each live session's current view
	pool     *optView

	cleanups atomic.Int64 // session cleanup callbacks registered so far (tests)
}

func newOptimizerState(maxResults int, logger *slog.Logger) *optimizerState {
	return &optimizerState{
		ix:         optimizer.NewIndex(),
		maxResults: maxResults,
		segs:       map[string]*segment{},
		sessions:   map[*Session]*optView{},
		logger:     logger,
	}
}

// segment is one indexed segment; ready is closed once its build ended
// (err says how).
type segment struct {
	refs  int
	ready chan struct{}
	err   error
}

// optView is one owner's searchable view: the keys of its tools and the
// segments it needs in the index.
type optView struct {
	st       *optimizerState
	agg      *aggregate
	segTools map[string][]mcp.Tool // segment key → the view's tools of that backend
	allowed  optimizer.ToolSet
	baseline int // estimated tokens of tools/list without the optimizer
	// noBackend is find_tool's message when the owner's view holds no
	// backend at all ("" when it holds one; always "" for the pool, whose
	// message comes from the pool).
	noBackend string
	// pool marks the stateless pool's view, which each request narrows to
	// the backends available when it arrives (without).
	pool     bool
	backends []string          // the view's backends, sorted
	segOf    map[string]string // segment key → backend
	segSize  map[string][2]int // segment key → {bytes of its tools' encodings, number of tools}

	filtered map[string]filteredView // under mu; key: the excluded backends

	mu      sync.Mutex
	held    map[string]*segment
	dropped bool
}

// newView computes the view of agg, never nil (fingerprints, allowed keys,
// baseline), without touching the index.
func (st *optimizerState) newView(agg *aggregate) *optView {
	v := &optView{st: st, agg: agg, segTools: map[string][]mcp.Tool{}, allowed: optimizer.ToolSet{}, held: map[string]*segment{},
		segOf: map[string]string{}, segSize: map[string][2]int{}}
	byBackend := map[string][]mcp.Tool{}
	for _, t := range agg.Tools {
		r := agg.ToolRoutes[t.Name]
		byBackend[r.Backend] = append(byBackend[r.Backend], t)
	}
	// One encoding per backend serves the fingerprint and the baseline
	// (encoding 10,000 tools takes a few hundred ms with mcp-go's
	// map-based MarshalJSON).
	size, n := 0, 0
	for backend, tools := range byBackend {
		key := backend
		if b, err := json.Marshal(tools); err == nil {
			sum := sha256.Sum256(b)
			key = backend + "@" + hex.EncodeToString(sum[:8])
			own := len(b) - 1 - len(tools) // the tools' own encodings: less '[', ']' and the commas
			size += own
			n += len(tools)
			v.segSize[key] = [2]int{own, len(tools)}
		}
		v.segOf[key] = backend
		v.segTools[key] = tools
		v.allowed.Add(key, tools...)
	}
	v.baseline = optimizer.EstimateListTokens(size, n)
	v.backends = slices.Sorted(maps.Keys(byBackend))
	return v
}

// setSessionView makes a view of agg the session's current view and
// returns it with the view it replaced (nil for the first), which the
// caller releases once the new one is indexed. The first view of a session
// installs the one callback that drops the session's view when it closes.
func (st *optimizerState) setSessionView(s *Session, agg *aggregate, noBackend string) (nv, old *optView) {
	nv = st.newView(agg) // off-lock: fingerprints encode every tool
	nv.noBackend = noBackend
	st.mu.Lock()
	old, had := st.sessions[s]
	st.sessions[s] = nv
	st.mu.Unlock()
	if !had {
		// If the session is already closed, the callback runs at once and
		// drops the view just set.
		st.cleanups.Add(1)
		context.AfterFunc(s.ctx, func() { st.dropSession(s) })
	}
	return nv, old
}

// sessionView returns the session's current view (nil once it closed).
func (st *optimizerState) sessionView(s *Session) *optView {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.sessions[s]
}

// poolView returns the view of the pool's current aggregate, replacing (and
// dropping) the previous one when the pool's backends changed.
func (st *optimizerState) poolView(agg *aggregate) *optView {
	st.mu.Lock()
	if v := st.pool; v != nil && v.agg == agg {
		st.mu.Unlock()
		return v
	}
	st.mu.Unlock()
	nv := st.newView(agg) // off-lock: fingerprints encode every tool
	nv.pool = true
	st.mu.Lock()
	if v := st.pool; v != nil && v.agg == agg {
		st.mu.Unlock()
		return v
	}
	old := st.pool
	st.pool = nv
	st.mu.Unlock()
	if old != nil {
		old.release()
	}
	return nv
}

// filteredView is a view's tool set less some backends' tools.
type filteredView struct {
	allowed  optimizer.ToolSet
	baseline int
}

// maxFiltered bounds the cached filtered sets of one view.
const maxFiltered = 16

// without returns v's tool set and baseline less the tools of the gone
// backends. The segments stay held by v (v.ensure indexes them); results
// are cached per set of gone backends.
func (v *optView) without(gone map[string]string) (optimizer.ToolSet, int) {
	key := strings.Join(slices.Sorted(maps.Keys(gone)), "\x00")
	v.mu.Lock()
	f, ok := v.filtered[key]
	v.mu.Unlock()
	if ok {
		return f.allowed, f.baseline
	}
	f.allowed = optimizer.ToolSet{}
	size, n := 0, 0
	for seg, tools := range v.segTools {
		if _, out := gone[v.segOf[seg]]; out {
			continue
		}
		f.allowed.Add(seg, tools...)
		size += v.segSize[seg][0]
		n += v.segSize[seg][1]
	}
	f.baseline = optimizer.EstimateListTokens(size, n)
	v.mu.Lock()
	if v.filtered == nil || len(v.filtered) >= maxFiltered {
		v.filtered = map[string]filteredView{}
	}
	v.filtered[key] = f
	v.mu.Unlock()
	return f.allowed, f.baseline
}

// joinSorted joins the values of m in the order of its keys, with "; ".
func joinSorted(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return strings.Join(out, "; ")
}

// dropSession forgets a session's view and releases its segments.
func (st *optimizerState) dropSession(s *Session) {
	st.mu.Lock()
	v := st.sessions[s]
	delete(st.sessions, s)
	st.mu.Unlock()
	if v != nil {
		v.release()
	}
}

// ensure indexes the segments of v that it does not hold yet. Failures
// (ctx expiry on a huge backend) are logged and retried by the next call;
// meanwhile searches simply miss those tools.
func (v *optView) ensure(ctx context.Context) {
	v.mu.Lock()
	var todo []string
	for key := range v.segTools {
		if v.held[key] == nil {
			todo = append(todo, key)
		}
	}
	v.mu.Unlock()
	sort.Strings(todo)
	for _, key := range todo {
		seg, err := v.st.acquire(ctx, key, v.segTools[key])
		if err != nil {
			v.st.logger.Warn("optimizer: indexing failed", "segment", key, "tools", len(v.segTools[key]), "err", err)
			continue
		}
		v.mu.Lock()
		keep := !v.dropped && v.held[key] == nil
		if keep {
			v.held[key] = seg
		}
		v.mu.Unlock()
		if !keep {
			v.st.release(key, seg)
		}
	}
}

// release gives back every segment v holds; v holds none afterwards.
func (v *optView) release() {
	v.mu.Lock()
	v.dropped = true
	held := v.held
	v.held = map[string]*segment{}
	v.mu.Unlock()
	for key, seg := range held {
		v.st.release(key, seg)
	}
}

// acquire takes a reference on segment key, building it from tools if it
// is not in the index. Concurrent acquirers of a segment being built wait
// for that build (bounded by their ctx); builds of different segments, and
// every search, proceed in parallel.
func (st *optimizerState) acquire(ctx context.Context, key string, tools []mcp.Tool) (*segment, error) {
	for {
		st.mu.Lock()
		seg := st.segs[key]
		if seg == nil {
			seg = &segment{refs: 1, ready: make(chan struct{})}
			st.segs[key] = seg
			st.mu.Unlock()
			err := st.ix.ReplaceBackend(ctx, key, tools)
			st.mu.Lock()
			seg.err = err
			if err != nil {
				delete(st.segs, key)
			}
			close(seg.ready)
			st.mu.Unlock()
			if err != nil {
				return nil, err
			}
			return seg, nil
		}
		seg.refs++
		st.mu.Unlock()
		select {
		case <-seg.ready:
		case <-ctx.Done():
			st.release(key, seg)
			return nil, ctx.Err()
		}
		if seg.err == nil {
			return seg, nil
		}
		// The build failed and the segment is gone: try to build it.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// release drops a reference on segment key; the last one removes the
// segment's documents from the index.
func (st *optimizerState) release(key string, seg *segment) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.segs[key] != seg {
		return // a failed build, already gone
	}
	seg.refs--
	if seg.refs == 0 {
		delete(st.segs, key)
		st.ix.RemoveBackend(key) // under st.mu: a new build of key cannot start before it
	}
}
