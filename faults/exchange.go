package faults

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"time"
)

// Stream is an SSE session stream (the legacy SSE transport) into which
// faults write the answer of a POST instead of its HTTP body.
type Stream interface {
	Inject(p []byte)       // write raw bytes into the stream
	Cancel()               // end the stream now
	Done() <-chan struct{} // closed when the stream ends
}

// Exchange is one HTTP request and its answer, as faults see it. Only W, R,
// Msg and Next are required.
type Exchange struct {
	W    http.ResponseWriter
	R    *http.Request
	Msg  Message
	Next http.Handler // serves the request normally (the upstream)
	// Stream is the SSE session stream a POST answers on; nil for
	// streamable HTTP.
	Stream Stream
	// Released is closed when the deciding fault is removed (ends stalls).
	Released <-chan struct{}
	// Done is closed when the server stops or restarts (ends stalls). May be nil.
	Done <-chan struct{}
	// Exit ends the process for crash exit: true. Nil: not supported.
	Exit func(code int)
	// ExpireSessions forgets the upstream's sessions (session_expire). Nil: not supported.
	ExpireSessions func()
	// Hold, if set, is called when a stall starts; the func it returns when it ends.
	Hold func() func()
}

// Respond sends a whole JSON-RPC message as the answer: the HTTP body, or
// an event on the session's stream for SSE.
func (x *Exchange) Respond(payload []byte) {
	if x.Stream != nil {
		x.W.WriteHeader(http.StatusAccepted)
		x.Stream.Inject(SSEEvent(payload))
		return
	}
	x.W.Header().Set("Content-Type", "application/json")
	x.W.WriteHeader(http.StatusOK)
	_, _ = x.W.Write(payload)
}

// Wait blocks until the fault is released (true), or the server ends or
// the client goes away (its request, or its SSE stream) (false).
func (x *Exchange) Wait() bool {
	var stream <-chan struct{}
	if x.Stream != nil {
		stream = x.Stream.Done()
	}
	return x.waitOn(x.R.Context().Done(), stream)
}

// waitOn is Wait with the channels that mean "the client went away".
func (x *Exchange) waitOn(client, stream <-chan struct{}) bool {
	if x.Hold != nil {
		defer x.Hold()()
	}
	select {
	case <-x.Released:
		return true
	case <-x.Done:
	case <-client:
	case <-stream:
	}
	return false
}

// Flush flushes the answer written so far.
func (x *Exchange) Flush() { _ = http.NewResponseController(x.W).Flush() }

// Apply carries out a terminal fault on x. It returns true when the
// request should then be served normally (by x.Next).
func Apply(x *Exchange, f *Fault) bool {
	a, ok := f.Params.(httpActor)
	return !ok || a.HTTP(x)
}

// Serve carries out the engine's decision d on x: it waits the added
// latency (until the client goes away or x.Done closes), applies the
// fault, and serves the request with x.Next unless the fault answered it.
func Serve(x *Exchange, d Decision) {
	if SleepCtx(x.R.Context(), x.Done, d.Delay) != nil {
		return
	}
	x.Released = d.Released
	if d.Fault == nil || Apply(x, d.Fault) {
		x.Next.ServeHTTP(x.W, x.R)
	}
}

// SSEEvent frames a JSON-RPC message as an SSE message event.
func SSEEvent(payload []byte) []byte {
	return []byte("event: message\ndata: " + string(payload) + "\n\n")
}

// maxRequestBody bounds what ReadMessage reads of one request.
const maxRequestBody = 16 << 20

// ReadMessage parses the JSON-RPC message of a POST from the first 16 MiB
// of its body, and puts the body back whole for the next handler (what was
// read, then the rest). ok is false when the client went away.
//
// A body read whole is put back as that copy alone, which the next handler
// can read at any time: a reverse proxy's transport may read its request
// body (once more after Content-Length bytes, to check there are no more)
// after the answer has started, when the HTTP/1 server has closed the
// inbound body; that read failing makes the transport drop the upstream
// connection and cut the answer in flight (golang/go#40747).
func ReadMessage(r *http.Request) (msg Message, ok bool) {
	var body []byte
	if r.Method == http.MethodPost && r.Body != nil {
		var err error
		if body, err = io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1)); err != nil {
			return Message{}, false
		}
		var rest io.Reader = bytes.NewReader(body)
		if len(body) > maxRequestBody {
			rest = io.MultiReader(rest, r.Body)
			body = body[:maxRequestBody]
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{rest, r.Body}
	}
	return ParseMessage(body), true
}

// Middleware applies the engine's faults in front of next, any
// http.Handler: a reverse proxy to a real backend, or an MCP server. POST
// bodies are read (their first 16 MiB) to match method and tool, then passed
// on whole to next. Faults that need their host (crash exit, session_expire) are
// skipped; SSE GET streams pass through.
func Middleware(e *Engine, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msg, ok := ReadMessage(r)
		if !ok {
			return // the client went away
		}
		if ServeResumed(w, r) {
			return
		}
		Serve(&Exchange{W: w, R: r, Msg: msg, Next: next}, e.Decide(msg.Method, msg.Name))
	})
}

// ErrStopped is SleepCtx's error when done was closed.
var ErrStopped = errors.New("stopped")

// SleepCtx waits d, or returns early with ctx's error when ctx ends or
// ErrStopped when done is closed.
func SleepCtx(ctx context.Context, done <-chan struct{}, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-done:
		return ErrStopped
	}
}

// AbortConn closes the request's connection abruptly: with reset, the
// peer sees a TCP RST (SO_LINGER 0), otherwise an EOF. What was written
// before is flushed first.
func AbortConn(w http.ResponseWriter, reset bool) {
	conn, bufrw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // net/http closes the connection
	}
	if bufrw != nil {
		_ = bufrw.Flush()
	}
	if reset {
		ResetConn(conn)
		return
	}
	_ = conn.Close()
}

// ResetConn closes a connection so that the peer sees a TCP RST.
func ResetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// StdioExchange is one JSON-RPC line of a stdio server, as faults see it.
type StdioExchange struct {
	Msg      Message
	Forward  func()       // pass the line on to the server
	Write    func([]byte) // write one line to the client
	Released <-chan struct{}
	Done     <-chan struct{} // closed when the server or the call ends
	// Crash ends the server (crash); exit: true also ends the process.
	Crash func(exit bool, code int)
}

// ApplyStdio carries out a terminal fault on one stdio line (kinds without
// a stdio form are refused by validation; here they forward the line).
func ApplyStdio(x *StdioExchange, f *Fault) {
	if a, ok := f.Params.(stdioActor); ok {
		a.Stdio(x)
		return
	}
	x.Forward()
}
