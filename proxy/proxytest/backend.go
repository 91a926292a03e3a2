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
	"github.com/vmcp-chaos/vmcp-chaos/faults"
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
	done chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	headers []http.Header           // request headers seen, for pass-through checks
	gets    map[string]*eventWriter // open standalone GET streams, by session id
	late    []string                // tools that answered before their notifications were out
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
	b := &Backend{Name: name, done: make(chan struct{})}
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
		if transport != SSE {
			ew := &eventWriter{ResponseWriter: w}
			switch r.Method {
			case http.MethodPost:
				w, r = ew, r.WithContext(context.WithValue(r.Context(), eventWriterKey{}, ew))
			case http.MethodGet:
				if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
					w = ew
					b.setGet(sid, nil, ew)
					defer b.setGet(sid, ew, nil)
				}
			}
		}
		h.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	b.wg.Go(func() {
		_ = b.srv.Serve(ln)
	})
	return b, nil
}

// Headers returns the request headers the backend has seen, in order.
func (b *Backend) Headers() []http.Header {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]http.Header(nil), b.headers...)
}

// Late lists the progress calls that answered before all their
// notifications were written (after waiting 5 s): mcp-go may then have
// dropped one. A test comparing notifications reports it.
func (b *Backend) Late() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.late...)
}

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
			switch err := faults.SleepCtx(ctx, b.done, time.Duration(req.GetFloat("ms", 0))*time.Millisecond); {
			case errors.Is(err, faults.ErrStopped):
				return nil, errors.New("server closing")
			case err != nil:
				return nil, err
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
			sid := ""
			if sess := server.ClientSessionFromContext(ctx); sess != nil {
				sid = sess.SessionID()
			}
			base := b.getEvents(sid)
			for i := 1; i <= steps; i++ {
				if token != nil {
					_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress),
						map[string]any{"progressToken": token, "progress": i, "total": steps})
				}
			}
			_ = srv.SendNotificationToClient(ctx, "notifications/message",
				map[string]any{"level": "info", "logger": b.Name, "data": "progressed " + strconv.Itoa(steps)})
			// mcp-go's streamable HTTP server writes a request's
			// notifications from other goroutines than its result (on this
			// POST's answer, or on the session's standalone GET stream), and
			// drops one taken off its queue but not yet written when the
			// result is ready: answer once they are all written.
			n := 1
			if token != nil {
				n += steps
			}
			b.waitEvents(ctx, sid, base, n)
			return mcp.NewToolResultText("progressed " + strconv.Itoa(steps)), nil
		})
	s.AddTool(mcp.NewTool("notify", mcp.WithDescription("notify the session later")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			srv := server.ServerFromContext(ctx)
			sess := server.ClientSessionFromContext(ctx)
			if sess != nil {
				id := sess.SessionID()
				go func() {
					if faults.SleepCtx(context.Background(), b.done, 50*time.Millisecond) != nil {
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

// eventWriter counts the SSE events (blank-line ends) written on a
// streamable HTTP answer or GET stream, so that a tool can wait until its
// notifications are out before it answers.
type eventWriter struct {
	http.ResponseWriter
	mu     sync.Mutex
	events int
	last   byte
}

type eventWriterKey struct{}

// Write implements http.ResponseWriter.
func (e *eventWriter) Write(p []byte) (int, error) {
	n, err := e.ResponseWriter.Write(p)
	e.mu.Lock()
	for _, c := range p[:n] {
		if c == '\n' && e.last == '\n' {
			e.events++
		}
		if c != '\r' {
			e.last = c
		}
	}
	e.mu.Unlock()
	return n, err
}

func (e *eventWriter) count() int {
	if e == nil {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.events
}

// Flush implements http.Flusher (mcp-go streams only through a Flusher).
func (e *eventWriter) Flush() { _ = http.NewResponseController(e.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the connection's writer.
func (e *eventWriter) Unwrap() http.ResponseWriter { return e.ResponseWriter }

// setGet registers the session's GET stream (old nil, e the stream) or
// removes it (old the stream, e nil) unless a newer one replaced it.
func (b *Backend) setGet(sid string, old, e *eventWriter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gets == nil {
		b.gets = map[string]*eventWriter{}
	}
	switch {
	case e != nil:
		b.gets[sid] = e
	case b.gets[sid] == old:
		delete(b.gets, sid)
	}
}

// getEvents is how many events the session's GET stream carried so far.
func (b *Backend) getEvents(sid string) int {
	if sid == "" {
		return 0
	}
	b.mu.Lock()
	e := b.gets[sid]
	b.mu.Unlock()
	return e.count()
}

// waitEvents waits (at most 5 s, or until ctx ends) until the request's
// streamable HTTP answer and its session's GET stream (from base events
// on) carry n events together; over the SSE transport, whose one stream
// keeps order, it returns at once.
func (b *Backend) waitEvents(ctx context.Context, sid string, base, n int) {
	post, _ := ctx.Value(eventWriterKey{}).(*eventWriter)
	if post == nil {
		return
	}
	start := time.Now()
	for post.count()+b.getEvents(sid)-base < n && time.Since(start) < 5*time.Second && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	if seen := post.count() + b.getEvents(sid) - base; seen < n {
		b.mu.Lock()
		b.late = append(b.late, fmt.Sprintf("session %q: %d of %d notifications written after %s (ctx: %v)",
			sid, seen, n, time.Since(start).Round(time.Millisecond), ctx.Err()))
		b.mu.Unlock()
	}
}
