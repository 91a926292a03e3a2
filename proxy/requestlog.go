package proxy

import (
	"context"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
)

// RequestRecord is one proxied request as GET /requests lists it (the fake
// backends' record: time, httpMethod, method, tool, id, sessionId, fault,
// status, durationMs).
type RequestRecord = fakebackends.RequestRecord

type recordKey struct{}

// RecordFrom returns the log record of the request being served, for the
// engine to fill in the JSON-RPC method, tool, id and the faults applied;
// nil outside the proxy.
func RecordFrom(ctx context.Context) *RequestRecord {
	r, _ := ctx.Value(recordKey{}).(*RequestRecord)
	return r
}

// Requests returns the request log (the last 10,000 requests).
func (p *Proxy) Requests() []RequestRecord { return p.requests.Snapshot() }
