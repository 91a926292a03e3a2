// Package proxytest runs real mcp-go MCP servers (not fake backends) for
// tests of the proxy and of experiments: tools, resources, a resource
// template, a prompt, progress and logging notifications, over streamable
// HTTP or the legacy SSE transport.
package proxytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Transports a Backend can serve.
const (
	StreamableHTTP = "streamable-http"
	SSE            = "sse"
)

// Backend is one real mcp-go server listening on 127.0.0.1.
type Backend struct {
	// Name is the server's name; its tools, resources and prompts carry it.
	Name string
	// URL is the MCP endpoint (/mcp, or /sse for the SSE transport).
	URL string

	srv  *http.Server
	ln   net.Listener
	done chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	headers []http.Header // request headers seen, for pass-through checks
}

// Start serves a real mcp-go server named name over transport (StreamableHTTP
// or SSE) on a free loopback port. Its tools:
//
//	echo {text}: returns {"text": ...} as JSON text
//	slow {ms}: waits ms milliseconds (bounded by the request), then "done"
//	progress {steps}: sends steps progress notifications (to the request's
//	  progress token) and a logging notification, then "progressed N"
//	notify: returns at once and, 50 ms later, sends a logging notification
//	  to the session outside any request (a standalone GET stream carries it)
//
// plus resource mem://NAME/readme, template mem://NAME/items/{id} and prompt
// greet {who}.
func Start(name, transport string) (*Backend, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &Backend{Name: name, ln: ln, done: make(chan struct{})}
	base := "http://" + ln.Addr().String()
	mcpSrv := b.newServer()
	var h http.Handler
	switch transport {
	case StreamableHTTP, "":
		h = server.NewStreamableHTTPServer(mcpSrv, server.WithStateful(true), server.WithEndpointPath("/mcp"))
		b.URL = base + "/mcp"
	case SSE:
		// An absolute base URL: the endpoint event names this server, so a
		// proxy must rewrite it.
		h = server.NewSSEServer(mcpSrv, server.WithBaseURL(base), server.WithKeepAlive(false))
		b.URL = base + "/sse"
	default:
		_ = ln.Close()
		return nil, fmt.Errorf("proxytest: unknown transport %q", transport)
	}
	b.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.headers = append(b.headers, r.Header.Clone())
		b.mu.Unlock()
		h.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		_ = b.srv.Serve(ln)
	}()
	return b, nil
}

// Headers returns the request headers the backend has seen, in order.
func (b *Backend) Headers() []http.Header {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]http.Header(nil), b.headers...)
}

// Addr is the backend's host:port.
func (b *Backend) Addr() string { return b.ln.Addr().String() }

// Close stops the server, cutting open streams; bounded (0.3 s grace).
func (b *Backend) Close() error {
	select {
	case <-b.done:
		return nil
	default:
		close(b.done)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := b.srv.Shutdown(ctx)
	if err != nil {
		err = b.srv.Close()
	}
	b.wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (b *Backend) newServer() *server.MCPServer {
	s := server.NewMCPServer(b.Name, "1.0.0",
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithPromptCapabilities(false),
		server.WithLogging(),
		server.WithRecovery(),
	)
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("echo the text of "+b.Name), mcp.WithString("text")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			out, _ := json.Marshal(map[string]any{"text": req.GetString("text", ""), "backend": b.Name})
			return mcp.NewToolResultText(string(out)), nil
		})
	s.AddTool(mcp.NewTool("slow", mcp.WithDescription("answer after ms milliseconds"), mcp.WithNumber("ms")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			d := time.Duration(req.GetFloat("ms", 0)) * time.Millisecond
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-b.done:
				return nil, errors.New("server closing")
			}
			return mcp.NewToolResultText("done"), nil
		})
	s.AddTool(mcp.NewTool("progress", mcp.WithDescription("send progress"), mcp.WithNumber("steps")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			steps := int(req.GetFloat("steps", 3))
			srv := server.ServerFromContext(ctx)
			var token any
			if req.Params.Meta != nil {
				token = req.Params.Meta.ProgressToken
			}
			for i := 1; i <= steps; i++ {
				if token != nil {
					_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress),
						map[string]any{"progressToken": token, "progress": i, "total": steps})
				}
			}
			_ = srv.SendNotificationToClient(ctx, "notifications/message",
				map[string]any{"level": "info", "logger": b.Name, "data": "progressed " + strconv.Itoa(steps)})
			// mcp-go's server writes a request's notifications from another
			// goroutine than its result: let them out first.
			time.Sleep(20 * time.Millisecond)
			return mcp.NewToolResultText("progressed " + strconv.Itoa(steps)), nil
		})
	s.AddTool(mcp.NewTool("notify", mcp.WithDescription("notify the session later")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			srv := server.ServerFromContext(ctx)
			sess := server.ClientSessionFromContext(ctx)
			if sess != nil {
				id := sess.SessionID()
				go func() {
					select {
					case <-time.After(50 * time.Millisecond):
					case <-b.done:
						return
					}
					_ = srv.SendNotificationToSpecificClient(id, "notifications/message",
						map[string]any{"level": "notice", "logger": b.Name, "data": "later"})
				}()
			}
			return mcp.NewToolResultText("will notify"), nil
		})
	s.AddResource(mcp.NewResource("mem://"+b.Name+"/readme", "readme", mcp.WithMIMEType("text/plain")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "readme of " + b.Name}}, nil
		})
	s.AddResourceTemplate(mcp.NewResourceTemplate("mem://"+b.Name+"/items/{id}", "item", mcp.WithTemplateMIMEType("text/plain")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "item " + req.Params.URI}}, nil
		})
	s.AddPrompt(mcp.NewPrompt("greet", mcp.WithPromptDescription("greet someone"), mcp.WithArgument("who", mcp.RequiredArgument())),
		func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("greeting", []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("hello "+req.Params.Arguments["who"]+" from "+b.Name)),
			}), nil
		})
	return s
}
