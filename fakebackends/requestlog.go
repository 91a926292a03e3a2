package fakebackends

import (
	"cmp"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"
)

// RequestRecord is one request a fake backend received, as logged.
type RequestRecord struct {
	Time       time.Time `json:"time"`
	HTTPMethod string    `json:"httpMethod,omitempty"` // POST, GET, DELETE; empty on stdio
	Method     string    `json:"method,omitempty"`     // JSON-RPC method
	Tool       string    `json:"tool,omitempty"`       // tool, prompt or resource addressed
	ID         string    `json:"id,omitempty"`         // JSON-RPC id, as JSON text
	SessionID  string    `json:"sessionId,omitempty"`
	Protocol   string    `json:"protocol,omitempty"` // legacy | modern
	Fault      string    `json:"fault,omitempty"`    // faults applied, e.g. "latency#0,http_status#1"
	Marker     string    `json:"marker,omitempty"`   // the request's _meta "vmcp-chaos/marker" (faults.MarkerKey)
	// Cancels is the JSON-RPC id (as JSON text) of the request a
	// notifications/cancelled names: which request the gateway cancelled.
	Cancels string `json:"cancels,omitempty"`
	// Pending is set while the request is still being served (a stall
	// holds it): logged when it arrives, completed when it ends.
	Pending    bool    `json:"pending,omitempty"`
	Status     int     `json:"status,omitempty"` // HTTP status written (0 when none was)
	DurationMS float64 `json:"durationMs"`
}

// maxLogRecords bounds the request log; older records are dropped.
const maxLogRecords = 10000

// RequestLog is a bounded, concurrency-safe log of requests (the last
// 10,000); the zero value is ready. The chaos proxy keeps one too.
type RequestLog struct {
	mu      sync.Mutex
	records []RequestRecord
	pending map[int64]RequestRecord
	nextID  int64
}

// Begin logs r as pending (a request still being served) and returns
// the handle End completes it by. Snapshot lists it, Pending set, until
// then.
func (l *RequestLog) Begin(r RequestRecord) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		l.pending = map[int64]RequestRecord{}
	}
	l.nextID++
	r.Pending = true
	l.pending[l.nextID] = r
	return l.nextID
}

// End replaces the pending record of handle id (0: none) by r, complete.
func (l *RequestLog) End(id int64, r RequestRecord) {
	l.mu.Lock()
	delete(l.pending, id)
	l.mu.Unlock()
	r.Pending = false
	l.Add(r)
}

// Add appends r, dropping the oldest record when the log is full.
func (l *RequestLog) Add(r RequestRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.records) >= maxLogRecords {
		l.records = l.records[1:]
	}
	l.records = append(l.records, r)
}

// Snapshot returns a copy of the records, oldest first, then the
// pending ones (by arrival).
func (l *RequestLog) Snapshot() []RequestRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]RequestRecord(nil), l.records...)
	ids := slices.Sorted(maps.Keys(l.pending))
	for _, id := range ids {
		out = append(out, l.pending[id])
	}
	return out
}

// NewRequestRecord starts the record of an HTTP request: its time, method
// and session (header Mcp-Session-Id, or the legacy SSE ?sessionId=).
func NewRequestRecord(r *http.Request) RequestRecord {
	return RequestRecord{Time: time.Now(), HTTPMethod: r.Method,
		SessionID: cmp.Or(r.Header.Get("Mcp-Session-Id"), r.URL.Query().Get("sessionId"))}
}

// ReadyLine is the JSON line `chaos backend` prints once the backend
// serves (on stdout; on stderr in stdio mode, where stdout carries MCP), so
// a harness that spawns it knows where it is.
type ReadyLine struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	Protocol  string `json:"protocol"`
	URL       string `json:"url,omitempty"` // empty for stdio
	Admin     string `json:"admin,omitempty"`
	PID       int    `json:"pid"`
}
