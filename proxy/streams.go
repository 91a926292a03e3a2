package proxy

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"sync"
)

// Stream is a legacy SSE session stream through the proxy, into which
// faults write the answer to one of the session's POSTs (instead of its
// HTTP body), at an event boundary.
type Stream interface {
	Inject(p []byte)       // write raw bytes into the stream
	Cancel()               // end the stream now
	Done() <-chan struct{} // closed when the stream ends
}

type streamKey struct{}

// StreamFrom returns the SSE session stream a legacy SSE POST belongs to,
// or nil (streamable HTTP, or an unknown session).
func StreamFrom(ctx context.Context) Stream {
	s, _ := ctx.Value(streamKey{}).(Stream)
	return s
}

// streams maps legacy SSE session ids to their streams through the proxy.
type streams struct {
	mu sync.Mutex
	m  map[string]*sseStream
}

func (s *streams) add(id string, st *sseStream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*sseStream{}
	}
	s.m[id] = st
}

func (s *streams) remove(id string, st *sseStream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[id] == st {
		delete(s.m, id)
	}
}

func (s *streams) get(id string) *sseStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id]
}

// sseStream wraps the response of a proxied GET. Upstream bytes and
// injected bytes are written under one lock, and injected bytes only at an
// event boundary (queued until the upstream's event in progress ends).
type sseStream struct {
	http.ResponseWriter
	cancel context.CancelFunc
	done   <-chan struct{}
	reg    *streams
	id     string
	seen   func(id string) // told the session id once known

	mu    sync.Mutex
	tail  []byte // the last bytes written, to find event boundaries
	queue [][]byte
}

// Write implements http.ResponseWriter.
func (s *sseStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.ResponseWriter.Write(p)
	s.track(p[:n])
	if err == nil && s.atBoundary() && len(s.queue) > 0 {
		for _, q := range s.queue {
			_, _ = s.ResponseWriter.Write(q)
			s.track(q)
		}
		s.queue = nil
	}
	return n, err
}

func (s *sseStream) track(p []byte) {
	s.tail = append(s.tail, p[max(len(p)-4, 0):]...)
	if len(s.tail) > 4 {
		s.tail = s.tail[len(s.tail)-4:]
	}
}

func (s *sseStream) atBoundary() bool {
	return bytes.HasSuffix(s.tail, []byte("\n\n")) || bytes.HasSuffix(s.tail, []byte("\r\n\r\n")) || bytes.HasSuffix(s.tail, []byte("\r\r"))
}

// Inject implements Stream.
func (s *sseStream) Inject(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p = bytes.Clone(p)
	if !s.atBoundary() {
		s.queue = append(s.queue, p)
		return
	}
	_, _ = s.ResponseWriter.Write(p)
	s.track(p)
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

// Cancel implements Stream: the proxied GET ends.
func (s *sseStream) Cancel() { s.cancel() }

// Done implements Stream.
func (s *sseStream) Done() <-chan struct{} { return s.done }

// Flush implements http.Flusher.
func (s *sseStream) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *sseStream) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// endpoint registers the stream under the session id of its endpoint URL.
func (s *sseStream) endpoint(raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		return
	}
	if id := u.Query().Get("sessionId"); id != "" && s.id == "" {
		s.id = id
		s.reg.add(id, s)
		if s.seen != nil {
			s.seen(id)
		}
	}
}
