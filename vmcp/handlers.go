package vmcp

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// toolErrorResult renders a backend failure as an isError tool result whose
// _meta names the backend and the kind of failure.
func toolErrorResult(be *BackendError) *mcp.CallToolResult {
	res := mcp.NewToolResultError(be.Error())
	res.Meta = &mcp.Meta{AdditionalFields: be.Meta()}
	return res
}

// forwardMeta keeps what a backend may use from the client's _meta: the
// progress token. Protocol metadata belongs to each hop.
func forwardMeta(m *mcp.Meta) *mcp.Meta {
	if m == nil || m.ProgressToken == nil {
		return nil
	}
	return &mcp.Meta{ProgressToken: m.ProgressToken}
}

func toolHandler(target caller, r route) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var res *mcp.CallToolResult
		be := target.call(ctx, r.Backend, "tools/call", func(ctx context.Context, c *client.Client) (err error) {
			res, err = c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
				Name: r.Name, Arguments: req.Params.Arguments, Meta: forwardMeta(req.Params.Meta)}})
			return err
		})
		if be != nil {
			return toolErrorResult(be), nil
		}
		return res, nil
	}
}

func resourceHandler(target caller, r route) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		var res *mcp.ReadResourceResult
		be := target.call(ctx, r.Backend, "resources/read", func(ctx context.Context, c *client.Client) (err error) {
			res, err = c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{
				URI: req.Params.URI, Meta: forwardMeta(req.Params.Meta)}})
			return err
		})
		if be != nil {
			holdError(ctx, be)
			return nil, be
		}
		return res.Contents, nil
	}
}

// promptHandler serves every prompt: it finds the caller's view from the
// request's session and routes by exposed name.
func (g *Gateway) promptHandler(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	target, agg := g.viewFor(ctx)
	if agg == nil {
		return nil, errUnknownSession
	}
	r, ok := agg.PromptRoutes[req.Params.Name]
	if !ok {
		return nil, fmt.Errorf("prompt %q not found: %w", req.Params.Name, server.ErrPromptNotFound)
	}
	var res *mcp.GetPromptResult
	be := target.call(ctx, r.Backend, "prompts/get", func(ctx context.Context, c *client.Client) (err error) {
		res, err = c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{
			Name: r.Name, Arguments: req.Params.Arguments, Meta: forwardMeta(req.Params.Meta)}})
		return err
	})
	if be != nil {
		holdError(ctx, be)
		return nil, be
	}
	return res, nil
}

// promptFilter shows each request the prompts of its own view.
func (g *Gateway) promptFilter(ctx context.Context, _ []mcp.Prompt) []mcp.Prompt {
	_, agg := g.viewFor(ctx)
	if agg == nil {
		return nil
	}
	return agg.Prompts
}

// registerPrompts makes every prompt name of agg known to the MCP server
// (prompts have no per-session store in mcp-go; the filter and the handler
// do the per-session part).
func (g *Gateway) registerPrompts(agg *aggregate) {
	g.promptMu.Lock()
	defer g.promptMu.Unlock()
	var add []server.ServerPrompt
	for _, p := range agg.Prompts {
		if !g.promptNames[p.Name] {
			g.promptNames[p.Name] = true
			add = append(add, server.ServerPrompt{Prompt: mcp.Prompt{Name: p.Name}, Handler: g.promptHandler})
		}
	}
	if len(add) > 0 {
		g.mcp.AddPrompts(add...)
	}
}

// applyView installs agg's tools, resources and templates on the mcp-go
// session (the per-session stores), routed to target.
func (g *Gateway) applyView(sess server.ClientSession, target caller, agg *aggregate) {
	g.registerPrompts(agg)
	if st, ok := sess.(server.SessionWithTools); ok && g.cfg.Optimizer.Enabled {
		g.attachOptimizer(target, agg) // optimizer_tools.go: find_tool and call_tool only
		st.SetSessionTools(g.optimizerTools())
	} else if _, legacy := target.(*Session); ok && legacy {
		st.SetSessionTools(g.sessionTools(agg)) // shared by sessions with this aggregate
	} else if ok {
		st.SetSessionTools(agg.toolTable(func(r route) server.ToolHandlerFunc { return toolHandler(target, r) }))
	}
	if sr, ok := sess.(server.SessionWithResources); ok {
		res := make(map[string]server.ServerResource, len(agg.Resources))
		for _, r := range agg.Resources {
			res[r.URI] = server.ServerResource{Resource: r, Handler: resourceHandler(target, agg.ResourceRoutes[r.URI])}
		}
		sr.SetSessionResources(res)
	}
	if srt, ok := sess.(server.SessionWithResourceTemplates); ok {
		tpls := make(map[string]server.ServerResourceTemplate, len(agg.Templates))
		for _, t := range agg.Templates {
			key := t.URITemplate.Raw()
			tpls[key] = server.ServerResourceTemplate{Template: t, Handler: server.ResourceTemplateHandlerFunc(resourceHandler(target, agg.TemplateRoutes[key]))}
		}
		srt.SetSessionResourceTemplates(tpls)
	}
}
