package fakebackends

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// sseStreams tracks the open SSE streams (legacy SSE transport) by session
// id, so faults can write into a stream or close it.
type sseStreams struct {
	mu      sync.Mutex
	streams map[string]*sseStream
}

func newSSEStreams() *sseStreams { return &sseStreams{streams: map[string]*sseStream{}} }

// sseStream wraps the ResponseWriter of one GET /sse stream. mcp-go writes
// each event with one Write, so a mutex keeps injected events whole.
type sseStream struct {
	mu        sync.Mutex
	w         http.ResponseWriter
	cancel    context.CancelFunc
	done      <-chan struct{} // closed when the stream ends
	registry  *sseStreams
	sessionID string
	ended     bool // the GET handler returned: the writer must not be used
}

// end marks the stream's handler as returned; later injections are dropped.
func (s *sseStream) end() {
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
}

// Header implements http.ResponseWriter.
func (s *sseStream) Header() http.Header { return s.w.Header() }

// WriteHeader implements http.ResponseWriter.
func (s *sseStream) WriteHeader(code int) { s.w.WriteHeader(code) }

// Write implements http.ResponseWriter; it learns the session id from the
// endpoint event.
func (s *sseStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessionID == "" {
		if id := sessionFromEndpointEvent(string(p)); id != "" {
			s.sessionID = id
			s.registry.put(id, s)
		}
	}
	return s.w.Write(p)
}

// Flush implements http.Flusher.
func (s *sseStream) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// Cancel ends the stream (faults.Stream).
func (s *sseStream) Cancel() { s.cancel() }

// Done is closed when the stream ends (faults.Stream).
func (s *sseStream) Done() <-chan struct{} { return s.done }

// Inject writes raw bytes into the stream and flushes (nothing once the
// stream ended); faults.Stream.
func (s *sseStream) Inject(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	_, _ = s.w.Write(p)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func sessionFromEndpointEvent(ev string) string {
	i := strings.Index(ev, "data: ")
	if !strings.HasPrefix(ev, "event: endpoint") || i < 0 {
		return ""
	}
	u, err := url.Parse(strings.TrimSpace(ev[i+len("data: "):]))
	if err != nil {
		return ""
	}
	return u.Query().Get("sessionId")
}

func (r *sseStreams) put(id string, s *sseStream) {
	r.mu.Lock()
	r.streams[id] = s
	r.mu.Unlock()
}

func (r *sseStreams) remove(s *sseStream) {
	r.mu.Lock()
	if r.streams[s.sessionID] == s {
		delete(r.streams, s.sessionID)
	}
	r.mu.Unlock()
}

func (r *sseStreams) get(id string) *sseStream {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.streams[id]
}

// closeAll ends every stream (their sessions end with them).
func (r *sseStreams) closeAll() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.streams)
	for id, s := range r.streams {
		s.cancel()
		delete(r.streams, id)
	}
	return n
}

func (r *sseStreams) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.streams)
}
