package vmcp

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/backend"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// openMember connects backend b for an owner (a session or the pool) and
// lists what it offers. A backend that fails is returned in state error
// with its cause, and without a connection.
func (g *Gateway) openMember(ctx, ownerCtx context.Context, owner string, wg *sync.WaitGroup, b config.Backend, preferLegacy bool) *member {
	m := &member{
		backend:      b,
		owner:        owner,
		d:            g.dialer,
		timeouts:     g.cfg.Timeouts,
		preferLegacy: preferLegacy,
		res:          g.res,
		shared:       g.shared,
		ctx:          ownerCtx,
		wg:           wg,
		state:        StateConnected,
	}
	m.request("initialize", func() *BackendError { return g.connectMember(ctx, m) }, func(be *BackendError) {
		if be != nil {
			m.state, m.lastErr, m.lastErrAt = StateError, be, time.Now()
		} else {
			m.lastOKAt, m.startedOK = time.Now(), true
		}
	})
	return m
}

// connectMember dials the backend and lists what it offers, all within the
// initialize timeout (each list also within the list timeout).
func (g *Gateway) connectMember(ctx context.Context, m *member) *BackendError {
	ctx, cancel := backend.WithOpenDeadline(ctx, g.cfg.Timeouts.Initialize)
	defer cancel()
	if m.owner != "" && m.preferLegacy && sharable(m.backend) {
		return g.connectShared(ctx, m)
	}
	c, be := g.dialer.Dial(ctx, m.backend, m.preferLegacy)
	if be != nil {
		return be
	}
	return g.listMember(ctx, m, c)
}

// listView lists backend name's tools, resources, templates and prompts, each
// bounded by the list timeout (and all by ctx). A capability the backend does not declare,
// or a list method it does not know, is empty.
func (g *Gateway) listView(ctx context.Context, name string, c *backend.Conn) (backendView, *BackendError) {
	var v backendView
	caps := c.Capabilities()
	steps := []func() *BackendError{
		listStep(ctx, g, c, "tools/list", caps.Tools != nil, &v.Tools, c.Client().ListTools,
			func(r *mcp.ListToolsResult) ([]mcp.Tool, mcp.Cursor) { return r.Tools, r.NextCursor }),
		listStep(ctx, g, c, "resources/list", caps.Resources != nil, &v.Resources, c.Client().ListResources,
			func(r *mcp.ListResourcesResult) ([]mcp.Resource, mcp.Cursor) { return r.Resources, r.NextCursor }),
		listStep(ctx, g, c, "resources/templates/list", caps.Resources != nil, &v.Templates, c.Client().ListResourceTemplates,
			func(r *mcp.ListResourceTemplatesResult) ([]mcp.ResourceTemplate, mcp.Cursor) {
				return r.ResourceTemplates, r.NextCursor
			}),
		listStep(ctx, g, c, "prompts/list", caps.Prompts != nil, &v.Prompts, c.Client().ListPrompts,
			func(r *mcp.ListPromptsResult) ([]mcp.Prompt, mcp.Cursor) { return r.Prompts, r.NextCursor }),
	}
	// The lists go out together (one round trip instead of four); the
	// first failure in list order is the one reported.
	errs := make([]*BackendError, len(steps))
	var wg sync.WaitGroup
	for i, step := range steps[1:] {
		wg.Go(func() { errs[i+1] = step() })
	}
	errs[0] = steps[0]()
	wg.Wait()
	for _, be := range errs {
		if be != nil {
			return backendView{}, be
		}
	}
	tools, be := g.checkTools(name, v.Tools)
	if be != nil {
		return backendView{}, be
	}
	v.Tools = tools
	return v, nil
}

// listStep is the step of listView that lists one kind of item into dst,
// bounded by the list timeout: nothing when the backend does not declare
// the capability or does not know the method. The list goes through the
// catalogue cache (listShared) when the connection allows it and the
// answer fits one page, otherwise through the client (fetch), which
// follows the pages. items picks the list and the next page's cursor out
// of a result.
func listStep[Req, R, T any](ctx context.Context, g *Gateway, c *backend.Conn, op string, declared bool, dst *[]T,
	fetch func(context.Context, Req) (*R, error), items func(*R) ([]T, mcp.Cursor)) func() *BackendError {
	return func() *BackendError {
		if !declared {
			return nil
		}
		be := c.Invoke(ctx, op, g.cfg.Timeouts.List, func(ctx context.Context) error {
			if r, ok, err := listShared[R](ctx, g.cats, c, c.Name(), op); ok {
				if err != nil {
					return err
				}
				if list, next := items(r); next == "" {
					*dst = list
					return nil
				}
			}
			var req Req
			r, err := fetch(ctx, req)
			if err != nil {
				return err
			}
			*dst, _ = items(r)
			return nil
		})
		if be != nil && be.Kind == KindJSONRPCError && be.Code == mcp.METHOD_NOT_FOUND {
			return nil
		}
		return be
	}
}

// openAll opens every configured backend in parallel for an owner.
func (g *Gateway) openAll(ctx, ownerCtx context.Context, owner string, wg *sync.WaitGroup, backends []config.Backend, preferLegacy bool) []*member {
	out := make([]*member, len(backends))
	var all sync.WaitGroup
	for i, b := range backends {
		all.Go(func() { out[i] = g.openMember(ctx, ownerCtx, owner, wg, b, preferLegacy) })
	}
	all.Wait()
	return out
}

// noBackendError is the error of a session none of whose backends answered.
func noBackendError(members []*member) error {
	errs := make([]error, 0, len(members))
	for _, m := range members {
		if m.lastErr != nil {
			errs = append(errs, m.lastErr)
		}
	}
	return &NoBackendError{Errs: errs}
}

// NoBackendError is returned when a session cannot start because no backend
// answered. Its message names every backend and its cause.
type NoBackendError struct {
	Errs []error
}

// Error renders "no backend available: " and every backend's failure,
// separated by "; ".
func (e *NoBackendError) Error() string {
	if len(e.Errs) == 0 {
		return "no backend available"
	}
	return "no backend available: " + joinErrors(e.Errs)
}

// joinErrors joins the errors' messages with "; ".
func joinErrors(errs []error) string {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap returns the per-backend errors.
func (e *NoBackendError) Unwrap() []error { return e.Errs }

// Is makes errors.Is(err, ErrBackendUnavailable) hold.
func (e *NoBackendError) Is(target error) bool { return target == ErrBackendUnavailable }
