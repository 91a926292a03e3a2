package fakebackends

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// maxRequestBody bounds what the backend reads of one request.
const maxRequestBody = 16 << 20

// ServeHTTP serves MCP through the fault engine.
func (b *Backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.inflight.Add(1)
	defer b.inflight.Done()
	if r.Method == http.MethodPost {
		b.posts.Add(1)
		defer b.posts.Add(-1)
	}
	g := b.current()
	conn, _ := r.Context().Value(connKey{}).(net.Conn)
	g.enter(conn)
	defer g.leave(conn)
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	rec := RequestRecord{Time: start, HTTPMethod: r.Method, SessionID: r.Header.Get("Mcp-Session-Id")}
	if rec.SessionID == "" {
		rec.SessionID = r.URL.Query().Get("sessionId")
	}
	defer func() {
		rec.Status = sw.status
		rec.DurationMS = float64(time.Since(start).Microseconds()) / 1000
		b.log.add(rec)
	}()

	var body []byte
	if r.Method == http.MethodPost && r.Body != nil {
		var err error
		body, err = io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
		if err != nil {
			return // the client went away
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	msg := parseRPC(body)
	msg.Modern = mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
	rec.Method, rec.Tool = msg.Method, msg.Name
	if len(msg.ID) > 0 {
		rec.ID = string(msg.ID)
	}
	switch {
	case msg.Modern:
		rec.Protocol = "modern"
	case b.script.Transport == TransportSSE || msg.Method != "" || r.Method != http.MethodPost:
		rec.Protocol = "legacy"
	}

	if b.refuseProtocol(sw, r, msg) {
		rec.Fault = "protocol"
		return
	}

	d := b.engine.decide(msg.Method, msg.Name)
	rec.Fault = d.label
	if d.delay > 0 {
		if err := sleepCtx(r.Context(), g.done, d.delay); err != nil {
			return
		}
	}
	if d.fault != nil && !b.applyFault(sw, r, g, msg, d) {
		return
	}
	b.serveMCP(sw, r, g)
}

// serveMCP hands the request to the MCP transport. For SSE streams the
// writer is wrapped so that faults can write into the stream.
func (b *Backend) serveMCP(w http.ResponseWriter, r *http.Request, g *generation) {
	if b.script.Transport == TransportSSE && r.Method == http.MethodGet {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		st := &sseStream{w: w, cancel: cancel, done: ctx.Done(), registry: g.streams}
		defer g.streams.remove(st)
		defer st.end()
		g.handler.ServeHTTP(st, r.WithContext(ctx))
		return
	}
	g.handler.ServeHTTP(w, r)
}

// refuseProtocol answers requests of a revision the script does not serve.
func (b *Backend) refuseProtocol(w http.ResponseWriter, r *http.Request, msg rpcMessage) bool {
	if b.script.Protocol != ProtocolModern || b.script.Transport == TransportSSE || msg.Modern {
		return false
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "this backend serves protocol "+mcp.ProtocolVersion20260728+" only", http.StatusMethodNotAllowed)
		return true
	}
	if msg.Method == "server/discover" {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(msg.errorResponse(mcp.UNSUPPORTED_PROTOCOL_VERSION,
		"this backend serves protocol "+mcp.ProtocolVersion20260728+" only"))
	return true
}

// applyFault carries out a terminal fault. It returns true when the request
// should still be served normally afterwards.
func (b *Backend) applyFault(w *statusWriter, r *http.Request, g *generation, msg rpcMessage, d decision) bool {
	f := d.fault
	switch f.Kind {
	case KindCrash:
		if f.Exit {
			b.log.add(RequestRecord{Time: time.Now(), Method: msg.Method, Tool: msg.Name, Fault: d.label + ":exit"})
			b.exit(f.ExitCode)
		}
		if f.Stage == StageAfterHeaders {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.Flush()
		}
		abortConn(w, f.Mode == CrashReset)
		return false
	case KindHTTPStatus:
		writeStatus(w, f)
		return false
	case KindStall:
		return b.stall(w, r, g, msg, f, d.released)
	case KindJSONRPCError:
		b.respond(w, r, g, msg.errorResponse(f.Code, f.Message))
		return false
	case KindToolError:
		b.respond(w, r, g, msg.toolErrorResponse(f.Text))
		return false
	case KindMalformed:
		b.malformed(w, r, g, msg, f)
		return false
	case KindSessionExpire:
		b.ExpireSessions()
		return true
	}
	return true
}

// sseTarget returns the stream an SSE POST belongs to, or nil for
// streamable HTTP.
func (b *Backend) sseTarget(r *http.Request, g *generation) *sseStream {
	if b.script.Transport != TransportSSE || r.Method != http.MethodPost {
		return nil
	}
	return g.streams.get(r.URL.Query().Get("sessionId"))
}

// respond sends a whole JSON-RPC message as the answer: the HTTP body for
// streamable HTTP, an event on the session's stream for SSE.
func (b *Backend) respond(w http.ResponseWriter, r *http.Request, g *generation, payload []byte) {
	if st := b.sseTarget(r, g); st != nil {
		w.WriteHeader(http.StatusAccepted)
		st.inject(sseEvent(payload))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(payload)
}

func sseEvent(payload []byte) []byte {
	return []byte("event: message\ndata: " + string(payload) + "\n\n")
}

func writeStatus(w http.ResponseWriter, f *Fault) {
	for k, v := range f.Headers {
		w.Header().Set(k, v)
	}
	var body []byte
	if f.Body != nil {
		switch {
		case f.Body.JSON != nil:
			body = mustJSON(f.Body.JSON)
			if w.Header().Get("Content-Type") == "" {
				w.Header().Set("Content-Type", "application/json")
			}
		case f.Body.Raw != "":
			body = []byte(f.Body.Raw)
		default:
			body = []byte(f.Body.Text)
			if w.Header().Get("Content-Type") == "" {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			}
		}
	}
	w.WriteHeader(f.Status)
	_, _ = w.Write(body)
}

// stall holds the request without answering, at the fault's stage, until
// the fault that holds it is removed (the faults are replaced or cleared),
// the backend stops or restarts, or the client goes away. It returns true
// when the request should then be served normally.
//
// Released, a before_headers stall is served normally; on streamable HTTP a
// stall at a later stage ends its response unfinished (no answer). On SSE a
// stall at a later stage holds the answer back from the session's event
// stream (the POST itself is accepted with 202 at once) and, released,
// delivers the real answer there (after ending a mid_body event that was
// cut); the client going away is the stream ending.
func (b *Backend) stall(w *statusWriter, r *http.Request, g *generation, msg rpcMessage, f *Fault, released <-chan struct{}) bool {
	if f.Stage != StageBeforeHeaders {
		if st := b.sseTarget(r, g); st != nil {
			b.stallSSE(w, r, g, msg, f, st, released)
			return false
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		switch f.Stage {
		case StageAfterProgress:
			for i := 1; i <= f.Progress; i++ {
				_, _ = w.Write(sseEvent(msg.progressNotification(i, f.Progress+1)))
			}
		case StageMidBody:
			_, _ = w.Write([]byte(midBodyEvent(msg)))
		}
		w.Flush()
	}
	b.stalls.Add(1)
	defer b.stalls.Add(-1)
	select {
	case <-released:
		return f.Stage == StageBeforeHeaders
	case <-g.done:
	case <-b.closed:
	case <-r.Context().Done():
	}
	return false
}

// midBodyEvent is a result event cut off in the middle.
func midBodyEvent(msg rpcMessage) string {
	return "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + string(msg.idOr()) + ",\"res"
}

// stallSSE is a stall after headers on the SSE transport: the POST is
// answered 202 and complete at once (the mcp-go client reads the whole POST
// before it waits on the stream), and the answer is held back from the
// stream. The handler stays in flight until the stall ends; the POST's
// connection is closed so the client never queues another request behind
// it.
func (b *Backend) stallSSE(w *statusWriter, r *http.Request, g *generation, msg rpcMessage, f *Fault, st *sseStream, released <-chan struct{}) {
	w.Header().Set("Content-Length", "0")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusAccepted)
	w.Flush()
	switch f.Stage {
	case StageAfterProgress:
		for i := 1; i <= f.Progress; i++ {
			st.inject(sseEvent(msg.progressNotification(i, f.Progress+1)))
		}
	case StageMidBody:
		st.inject([]byte(midBodyEvent(msg)))
	}
	b.stalls.Add(1)
	defer b.stalls.Add(-1)
	select {
	case <-released:
	case <-st.done: // the client went away with its stream
		return
	case <-g.done:
		return
	case <-b.closed:
		return
	}
	if f.Stage == StageMidBody {
		// End the cut event (clients drop it as unparsable) so the real
		// answer arrives as an event of its own.
		st.inject([]byte("\n\n"))
	}
	// mcp-go answers 202 and queues the real answer on the stream; the
	// POST was answered already, so its writer here is a sink.
	g.handler.ServeHTTP(&sinkWriter{header: http.Header{}}, r)
}

// sinkWriter is a ResponseWriter that discards everything.
type sinkWriter struct{ header http.Header }

// Header implements http.ResponseWriter.
func (s *sinkWriter) Header() http.Header { return s.header }

// Write implements http.ResponseWriter.
func (s *sinkWriter) Write(p []byte) (int, error) { return len(p), nil }

// WriteHeader implements http.ResponseWriter.
func (s *sinkWriter) WriteHeader(int) {}

// malformed sends a broken answer of the fault's variant.
func (b *Backend) malformed(w *statusWriter, r *http.Request, g *generation, msg rpcMessage, f *Fault) {
	switch f.Variant {
	case MalformedWrongID:
		b.respond(w, r, g, msg.wrongIDResponse())
	case MalformedInvalidJSON:
		b.respond(w, r, g, msg.invalidJSON())
	case MalformedOversized:
		payload := oversized(msg, int64(f.Size))
		b.respond(w, r, g, payload)
	case MalformedTruncatedSSE:
		part := []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + string(msg.idOr()) + ",\"result\":{\"con")
		if st := b.sseTarget(r, g); st != nil {
			w.WriteHeader(http.StatusAccepted)
			st.inject(part)
			st.cancel() // the stream ends in the middle of an event
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(part)
		w.Flush()
		// Returning ends the body cleanly in the middle of the event.
	}
}

// oversized builds a valid result whose text makes the body about size bytes.
func oversized(msg rpcMessage, size int64) []byte {
	var buf bytes.Buffer
	buf.Grow(int(size) + 128)
	buf.WriteString(`{"jsonrpc":"2.0","id":` + string(msg.idOr()) + `,"result":{"content":[{"type":"text","text":"`)
	buf.WriteString(strings.Repeat("x", int(max(size-int64(buf.Len())-8, 1))))
	buf.WriteString(`"}]}}`)
	return buf.Bytes()
}

// abortConn closes the request's connection abruptly: with reset, the peer
// sees a TCP RST (SO_LINGER 0), otherwise an EOF.
func abortConn(w http.ResponseWriter, reset bool) {
	conn, bufrw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // net/http closes the connection
	}
	if bufrw != nil {
		_ = bufrw.Flush()
	}
	if reset {
		resetConn(conn)
		return
	}
	_ = conn.Close()
}

// resetConn closes a connection so that the peer sees a TCP RST.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// statusWriter records the status written and forwards Flush and Hijack.
type statusWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader implements http.ResponseWriter.
func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (s *statusWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// Flush implements http.Flusher.
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack implements http.Hijacker.
func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := s.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("hijack not supported")
	}
	return h.Hijack()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
