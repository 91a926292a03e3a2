package fakebackends

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
)

// newMCPServer builds the MCP server that serves what the script declares.
// done is closed when the backend stops; tool delays end early then.
func newMCPServer(s *Script, done <-chan struct{}) *server.MCPServer {
	srv := server.NewMCPServer(s.Name, "0.1.0",
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithPromptCapabilities(false),
		server.WithRecovery(),
	)
	for _, t := range s.Tools {
		srv.AddTool(toolDefinition(t), toolHandler(t, done))
	}
	for _, r := range s.Resources {
		res := mcp.NewResource(r.URI, cmp.Or(r.Name, r.URI), mcp.WithMIMEType(mimeOr(r.MimeType)), mcp.WithResourceDescription(r.Description))
		res.Meta = metaOf(r.Meta)
		srv.AddResource(res, func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: mimeOr(r.MimeType), Text: r.Text}}, nil
		})
	}
	for _, t := range s.ResourceTemplates {
		tmpl := mcp.NewResourceTemplate(t.URITemplate, cmp.Or(t.Name, t.URITemplate), mcp.WithTemplateMIMEType(mimeOr(t.MimeType)))
		srv.AddResourceTemplate(tmpl, func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: mimeOr(t.MimeType), Text: t.Text}}, nil
		})
	}
	for _, p := range s.Prompts {
		opts := []mcp.PromptOption{mcp.WithPromptDescription(p.Description)}
		for _, a := range p.Arguments {
			argOpts := []mcp.ArgumentOption{mcp.ArgumentDescription(a.Description)}
			if a.Required {
				argOpts = append(argOpts, mcp.RequiredArgument())
			}
			opts = append(opts, mcp.WithArgument(a.Name, argOpts...))
		}
		prompt := mcp.NewPrompt(p.Name, opts...)
		prompt.Meta = metaOf(p.Meta)
		srv.AddPrompt(prompt, func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult(p.Description, []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(p.Text)),
			}), nil
		})
	}
	return srv
}

func toolDefinition(t ToolSpec) mcp.Tool {
	input := t.Input
	if input == nil {
		input = map[string]any{"type": "object"}
	}
	schema, err := json.Marshal(input)
	if err != nil {
		schema = []byte(`{"type":"object"}`)
	}
	tool := mcp.NewToolWithRawSchema(t.Name, t.Description, schema)
	tool.Meta = metaOf(t.Meta)
	return tool
}

// metaOf is a _meta object holding m (nil when m is empty).
func metaOf(m map[string]any) *mcp.Meta {
	if len(m) == 0 {
		return nil
	}
	return &mcp.Meta{AdditionalFields: m}
}

// toolHandler returns the handler that produces a tool's scripted result,
// after its delay and progress notifications.
func toolHandler(t ToolSpec, done <-chan struct{}) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if t.Progress > 0 {
			var token mcp.ProgressToken = "fake-progress"
			if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
				token = req.Params.Meta.ProgressToken
			}
			srv := server.ServerFromContext(ctx)
			for i := 1; i <= t.Progress; i++ {
				// Stop when the client left (or the backend stops), also
				// with no interval between notifications.
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				select {
				case <-done:
					return nil, errStopped
				default:
				}
				if srv != nil {
					_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
						"progressToken": token, "progress": i, "total": t.Progress,
					})
				}
				if err := sleepCtx(ctx, done, t.ProgressInterval.D()); err != nil {
					return nil, err
				}
			}
		}
		if err := sleepCtx(ctx, done, t.Delay.D()); err != nil {
			return nil, err
		}
		switch {
		case t.Result.JSON != nil:
			b, err := json.Marshal(t.Result.JSON)
			if err != nil {
				return nil, fmt.Errorf("tool %q: result json: %w", t.Name, err)
			}
			res := mcp.NewToolResultText(string(b))
			res.StructuredContent = t.Result.JSON
			return res, nil
		case t.Result.Text != "":
			return mcp.NewToolResultText(t.Result.Text), nil
		default: // echo
			b, err := json.Marshal(req.GetArguments())
			if err != nil {
				return nil, fmt.Errorf("tool %q: echo: %w", t.Name, err)
			}
			return mcp.NewToolResultText(string(b)), nil
		}
	}
}

// sleepCtx waits d, or returns early with an error when ctx ends or done is
// closed (errStopped).
func sleepCtx(ctx context.Context, done <-chan struct{}, d time.Duration) error {
	if err := faults.SleepCtx(ctx, done, d); err != faults.ErrStopped {
		return err
	}
	return errStopped
}

// mimeOr is the MIME type m, text/plain by default.
func mimeOr(m string) string { return cmp.Or(m, "text/plain") }
