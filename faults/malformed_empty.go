package faults

import (
	"net/http"
	"slices"
)

// The malformed variants that answer a request with no answer at all: what
// a transport could mistake for "neither a response nor an error" (issue 12:
// a nil response dereferenced by a client). A gateway must report each as
// a failure of the backend, never as a success with an empty result.
const (
	// MalformedAccepted answers the request 202 Accepted with an empty
	// body, the answer to a notification. Streamable HTTP only (on the
	// legacy SSE transport every POST is answered so; a missing answer on
	// the stream is a stall).
	MalformedAccepted = "accepted"
	// MalformedEmptyBody answers 200 with Content-Type application/json and
	// an empty body. Streamable HTTP only.
	MalformedEmptyBody = "empty_body"
	// MalformedUnansweredSSE answers 200 text/event-stream with one
	// notifications/message event, then ends the stream without the
	// response. Streamable HTTP only.
	MalformedUnansweredSSE = "unanswered_sse"
	// MalformedNoResult answers with the request's id and neither a
	// result nor an error (JSON-RPC requires exactly one): a JSON body, an
	// event of the SSE session stream, a stdio line.
	MalformedNoResult = "no_result"
)

// httpOnlyVariants are the malformed variants of streamable HTTP only.
var httpOnlyVariants = []string{MalformedAccepted, MalformedEmptyBody, MalformedUnansweredSSE}

// checkEmptyVariant refuses a streamable-HTTP-only variant on another
// transport ("" is any: the fault proxy does not know it).
func (p *Malformed) checkEmptyVariant(c *Check) error {
	if slices.Contains(httpOnlyVariants, p.Variant) && c.Transport != "" && c.Transport != TransportStreamableHTTP {
		return c.Errf("variant", "variant %s applies to streamable-http only, not %s (use stall or no_result)", p.Variant, c.Transport)
	}
	return nil
}

// emptyHTTP carries out the variants of this file on an HTTP exchange.
func (p *Malformed) emptyHTTP(x *Exchange) {
	switch p.Variant {
	case MalformedNoResult:
		x.Respond(x.Msg.NoResultResponse())
		return
	case MalformedAccepted:
		x.W.WriteHeader(http.StatusAccepted)
	case MalformedEmptyBody:
		x.W.Header().Set("Content-Type", "application/json")
		x.W.WriteHeader(http.StatusOK)
	case MalformedUnansweredSSE:
		x.W.Header().Set("Content-Type", "text/event-stream")
		x.W.WriteHeader(http.StatusOK)
		_, _ = x.W.Write(SSEEvent([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"no answer follows"}}`)))
	}
	x.Flush() // returning ends the body
}

// NoResultResponse is a response to m with neither result nor error.
func (m Message) NoResultResponse() []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + string(m.IDOr()) + `}`)
}
