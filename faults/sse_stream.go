package faults

import (
	"bytes"
	"context"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"
)

// SSEStreams are the open SSE session streams of the legacy SSE transport,
// by session id, so that faults can write into a session's stream or end
// it. The fake backends and the fault proxy keep one. The zero value is
// ready.
type SSEStreams struct {
	mu sync.Mutex
	m  map[string]*SSEStream
}

// Open wraps w, the answer of an SSE GET, in a stream; serve the GET with
// the returned context (Cancel ends it) and call Close when its handler
// returns. The stream joins the registry once its session id is known
// (SetSession, or its endpoint event written whole).
func (ss *SSEStreams) Open(ctx context.Context, w http.ResponseWriter) (*SSEStream, context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	return &SSEStream{ResponseWriter: w, cancel: cancel, done: ctx.Done(), closed: make(chan struct{}), reg: ss}, ctx
}

// Get returns the stream of a session, or nil.
func (ss *SSEStreams) Get(id string) *SSEStream {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.m[id]
}

// cancelWait bounds how long CancelAll waits for the GET handlers to return.
const cancelWait = 2 * time.Second

// CancelAll ends every stream (their sessions end with them) and returns
// how many there were. It returns once their GET handlers have returned
// (Close), at most cancelWait later: until then the server may still take
// a request on such a session and answer it on the ending stream, so an
// expiry would not yet be one.
func (ss *SSEStreams) CancelAll() int {
	ss.mu.Lock()
	streams := slices.Collect(maps.Values(ss.m))
	clear(ss.m)
	ss.mu.Unlock()
	for _, s := range streams {
		s.cancel()
	}
	timeout := time.NewTimer(cancelWait)
	defer timeout.Stop()
	for _, s := range streams {
		select {
		case <-s.closed:
		case <-timeout.C:
			return len(streams)
		}
	}
	return len(streams)
}

// Len is the number of streams with a known session.
func (ss *SSEStreams) Len() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.m)
}

// SSEStream is the answer of one SSE GET, into which faults write (Stream).
// The server's bytes and injected bytes are written under one lock, and
// injected bytes only at an event boundary of the server's bytes (queued
// until the server's event in progress ends); once the GET's handler has
// returned (Close), injected bytes are dropped.
type SSEStream struct {
	http.ResponseWriter
	cancel context.CancelFunc
	done   <-chan struct{}
	closed chan struct{} // closed by Close: the GET's handler returned
	reg    *SSEStreams

	mu    sync.Mutex
	id    string   // the session, once known
	tail  []byte   // the server's last bytes, to find event boundaries
	queue [][]byte // injected bytes waiting for a boundary
	// cut is set while injected bytes end inside an event (a mid_body
	// stall's partial answer): the server's next write completes that
	// event first, so no bytes of it are ever glued to another event.
	cut bool
}

// Write implements http.ResponseWriter. An endpoint event written whole
// (as mcp-go writes it) makes the stream known by its session id.
func (s *SSEStream) Write(p []byte) (int, error) {
	s.SetSession(sessionFromEndpointEvent(p))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cut {
		s.cut = false
		if _, err := s.ResponseWriter.Write([]byte("\n\n")); err != nil {
			return 0, err
		}
	}
	n, err := s.ResponseWriter.Write(p)
	s.tail = append(s.tail, p[max(n-4, 0):n]...)
	s.tail = s.tail[max(len(s.tail)-4, 0):]
	if err == nil && s.atBoundary() {
		for _, q := range s.queue {
			_, _ = s.ResponseWriter.Write(q)
		}
		s.queue = nil
	}
	return n, err
}

// atBoundary reports whether the server's bytes end at an event boundary
// (or there are none yet).
func (s *SSEStream) atBoundary() bool {
	return len(s.tail) == 0 || bytes.HasSuffix(s.tail, []byte("\n\n")) || bytes.HasSuffix(s.tail, []byte("\r\n\r\n")) || bytes.HasSuffix(s.tail, []byte("\r\r"))
}

// Inject implements Stream: it writes p and flushes at the server's next
// event boundary; nothing once the stream ended.
func (s *SSEStream) Inject(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.ended():
	case !s.atBoundary():
		s.queue = append(s.queue, bytes.Clone(p))
	default:
		if s.cut { // complete the cut event before anything else
			_, _ = s.ResponseWriter.Write([]byte("\n\n"))
		}
		_, _ = s.ResponseWriter.Write(p)
		s.cut = len(bytes.TrimSpace(p)) > 0 && !bytes.HasSuffix(p, []byte("\n\n"))
		_ = http.NewResponseController(s.ResponseWriter).Flush()
	}
}

// Cancel implements Stream: the GET ends.
func (s *SSEStream) Cancel() { s.cancel() }

// Done implements Stream.
func (s *SSEStream) Done() <-chan struct{} { return s.done }

// Flush implements http.Flusher.
func (s *SSEStream) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *SSEStream) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// SetSession registers the stream under its session id and reports
// whether it did (a stream's first id wins).
func (s *SSEStream) SetSession(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == "" || s.id != "" {
		return false
	}
	s.id = id
	s.reg.mu.Lock()
	defer s.reg.mu.Unlock()
	if s.reg.m == nil {
		s.reg.m = map[string]*SSEStream{}
	}
	s.reg.m[id] = s
	return true
}

// Close ends the stream when its GET's handler returns: later injections
// are dropped and the stream leaves the registry.
func (s *SSEStream) Close() {
	s.mu.Lock()
	if !s.ended() {
		close(s.closed)
	}
	id := s.id
	s.mu.Unlock()
	s.cancel()
	s.reg.mu.Lock()
	defer s.reg.mu.Unlock()
	if s.reg.m[id] == s {
		delete(s.reg.m, id)
	}
}

// ended reports whether the GET's handler has returned (Close).
func (s *SSEStream) ended() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// sessionFromEndpointEvent is the session id of a whole endpoint event's
// URL (its ?sessionId=), or "".
func sessionFromEndpointEvent(ev []byte) string {
	rest, ok := bytes.CutPrefix(ev, []byte("event: endpoint"))
	_, data, found := bytes.Cut(rest, []byte("data: "))
	if !ok || !found {
		return ""
	}
	return EndpointSession(string(bytes.TrimSpace(data)))
}

// EndpointSession is the session id of a legacy SSE endpoint URL (its
// ?sessionId=), or "".
func EndpointSession(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	return u.Query().Get("sessionId")
}
