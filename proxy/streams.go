package proxy

import (
	"context"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
)

// Stream is a legacy SSE session stream through the proxy, into which
// faults write the answer to one of the session's POSTs (instead of its
// HTTP body), at an event boundary.
type Stream = faults.Stream

type streamKey struct{}

// StreamFrom returns the SSE session stream a legacy SSE POST belongs to,
// or nil (streamable HTTP, or an unknown session).
func StreamFrom(ctx context.Context) Stream {
	s, _ := ctx.Value(streamKey{}).(Stream)
	return s
}
