package proxy

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
)

// RequestRecord is one proxied request as GET /requests lists it (the fake
// backends' record: time, httpMethod, method, tool, id, sessionId, fault,
// status, durationMs).
type RequestRecord = fakebackends.RequestRecord

// maxLogRecords bounds the request log; older records are dropped.
const maxLogRecords = 10000

type requestLog struct {
	mu      sync.Mutex
	records []RequestRecord
}

func (l *requestLog) add(r RequestRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.records) >= maxLogRecords {
		l.records = l.records[1:]
	}
	l.records = append(l.records, r)
}

func (l *requestLog) snapshot() []RequestRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]RequestRecord{}, l.records...)
}

type recordKey struct{}

// RecordFrom returns the log record of the request being served, for the
// engine to fill in the JSON-RPC method, tool, id and the faults applied;
// nil outside the proxy.
func RecordFrom(ctx context.Context) *RequestRecord {
	r, _ := ctx.Value(recordKey{}).(*RequestRecord)
	return r
}

// statusWriter records the status written; http.ResponseController reaches
// the writer underneath through Unwrap (flushes, hijacks).
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
func (s *statusWriter) Flush() { _ = http.NewResponseController(s.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Requests returns the request log (the last 10,000 requests).
func (p *Proxy) Requests() []RequestRecord { return p.requests.snapshot() }

func newRecord(r *http.Request) *RequestRecord {
	rec := &RequestRecord{Time: time.Now(), HTTPMethod: r.Method, SessionID: r.Header.Get("Mcp-Session-Id")}
	if rec.SessionID == "" {
		rec.SessionID = r.URL.Query().Get("sessionId")
	}
	return rec
}
