package vmcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/backend"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// Sessions share what their backends list when it is byte for byte the
// same: a list answer is decoded once per distinct content (catalogues),
// sessions whose views are the same lists share one aggregate
// (aggregates), and sessions with the same aggregate share one tool
// handler table (sessionTools). Each session still has its own backend
// sessions; only the immutable catalogue is shared.

// maxCatalogues bounds the catalogue cache (distinct list answers kept).
const maxCatalogues = 256

// catalogues caches decoded list answers by backend, method and content.
type catalogues struct {
	seed maphash.Seed
	mu   sync.Mutex
	m    map[catalogueKey]*catalogue
}

type catalogueKey struct {
	backend, method string
	hash            uint64
}

type catalogue struct {
	raw    []byte
	result any // *mcp.ListToolsResult, ... (never modified)
}

func newCatalogues() *catalogues {
	return &catalogues{seed: maphash.MakeSeed(), m: map[catalogueKey]*catalogue{}}
}

// decode returns the list answer raw decoded into a new T, or the T
// decoded earlier from the same bytes for the same backend and method.
func decodeShared[T any](cs *catalogues, backendName, method string, raw []byte) (*T, error) {
	key := catalogueKey{backendName, method, maphash.Bytes(cs.seed, raw)}
	cs.mu.Lock()
	c := cs.m[key]
	cs.mu.Unlock()
	if c != nil && bytes.Equal(c.raw, raw) {
		if v, ok := c.result.(*T); ok {
			return v, nil
		}
	}
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, err
	}
	cs.mu.Lock()
	if len(cs.m) >= maxCatalogues {
		for k := range cs.m { // evict any one
			delete(cs.m, k)
			break
		}
	}
	cs.m[key] = &catalogue{raw: bytes.Clone(raw), result: v}
	cs.mu.Unlock()
	return v, nil
}

var listSeq atomic.Int64

// listShared sends one list request on c's transport and decodes its
// result through the catalogue cache. ok is false when the connection is
// not one this path serves (a stateless connection, whose requests carry
// per-request _meta, or stdio and SSE, whose shared streams the client's
// own ids are matched on): the caller lists through the client instead.
func listShared[T any](ctx context.Context, cs *catalogues, c *backend.Conn, backendName, method string) (res *T, ok bool, err error) {
	if c.Transport() != config.TransportStreamableHTTP || mcp.IsModernProtocol(c.Protocol()) {
		return nil, false, nil
	}
	req := transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION,
		ID: mcp.NewRequestId(fmt.Sprintf("vmcp-list-%d", listSeq.Add(1))), Method: method, Params: struct{}{}}
	resp, err := c.Client().GetTransport().SendRequest(ctx, req)
	if err != nil {
		return nil, true, transport.NewError(err) // as mcp-go's client wraps it
	}
	if resp.Error != nil { // resp is never nil without an error (answeredHTTP)
		return nil, true, resp.Error.AsError()
	}
	res, err = decodeShared[T](cs, backendName, method, resp.Result)
	if err != nil {
		return nil, true, fmt.Errorf("decode %s result: %w", method, err)
	}
	return res, true, nil
}

// aggregates remembers the last aggregate built, so sessions whose views
// are the very same lists (shared catalogues) share it.
type aggregates struct {
	mu   sync.Mutex
	key  string
	last *aggregate
}

// viewsKey identifies views by the identity of their lists ("" when a
// list is empty is fine: empty lists are equal).
func viewsKey(views map[string]backendView, names []string) string {
	var b []byte
	for _, n := range names {
		v := views[n]
		b = fmt.Appendf(b, "%s:%p/%d,%p/%d,%p/%d,%p/%d;", n,
			unsafe.SliceData(v.Tools), len(v.Tools), unsafe.SliceData(v.Resources), len(v.Resources),
			unsafe.SliceData(v.Templates), len(v.Templates), unsafe.SliceData(v.Prompts), len(v.Prompts))
	}
	return string(b)
}

// build returns buildAggregate(a, views), shared with the last caller
// whose views were the same lists.
func (as *aggregates) build(a config.Aggregation, views map[string]backendView) *aggregate {
	names := slices.Sorted(maps.Keys(views))
	key := viewsKey(views, names)
	as.mu.Lock()
	if as.last != nil && as.key == key {
		agg := as.last
		as.mu.Unlock()
		return agg
	}
	as.mu.Unlock()
	agg := buildAggregate(a, views)
	as.mu.Lock()
	as.key, as.last = key, agg
	as.mu.Unlock()
	return agg
}

// sessionTools returns the tool table of agg for legacy sessions: each
// handler finds its session from the request, so sessions with the same
// aggregate share one table (mcp-go copies it per session).
func (g *Gateway) sessionTools(agg *aggregate) map[string]server.ServerTool {
	agg.sessOnce.Do(func() { agg.sessTools = agg.toolTable(g.sessionToolHandler) })
	return agg.sessTools
}

// toolTable is agg's tools, each served by the handler made for its route.
func (agg *aggregate) toolTable(handler func(route) server.ToolHandlerFunc) map[string]server.ServerTool {
	tools := make(map[string]server.ServerTool, len(agg.Tools))
	for _, t := range agg.Tools {
		tools[t.Name] = server.ServerTool{Tool: t, Handler: handler(agg.ToolRoutes[t.Name])}
	}
	return tools
}

// sessionToolHandler is toolHandler for the legacy session the request
// belongs to.
func (g *Gateway) sessionToolHandler(r route) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var s *Session
		if sess := server.ClientSessionFromContext(ctx); sess != nil {
			s = g.session(sess.SessionID())
		}
		if s == nil {
			// The session closed after mcp-go admitted the request.
			return toolErrorResult(&BackendError{Backend: r.Backend, Op: "tools/call", Kind: KindClosed,
				Cause: "session closed", Err: backend.ErrSessionClosing}), nil
		}
		return toolHandler(s, r)(ctx, req)
	}
}
