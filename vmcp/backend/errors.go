package backend

import (
	"errors"
	"fmt"
)

// ErrorKind classifies why a backend call failed. It is sent to clients as
// the "vmcp/errorKind" _meta value (tools/call) or data.kind (JSON-RPC
// errors).
type ErrorKind string

// Error kinds. All but KindJSONRPCError and KindCanceled mean the backend is
// unavailable: errors.Is(err, ErrUnavailable) holds for them.
const (
	// KindConnectionRefused: nothing listens at the backend's address.
	KindConnectionRefused ErrorKind = "connection_refused"
	// KindUnreachable: the backend's address does not resolve (a killed
	// container leaves its network's DNS: "no such host") or no route
	// leads to it (host or network unreachable).
	KindUnreachable ErrorKind = "unreachable"
	// KindConnectionReset: the backend reset the connection (TCP RST).
	KindConnectionReset ErrorKind = "connection_reset"
	// KindConnectionClosed: the connection or stream ended before the
	// response (EOF, a cut SSE stream, a stdio process that exited).
	KindConnectionClosed ErrorKind = "connection_closed"
	// KindHTTPStatus: the backend answered with an HTTP error status;
	// Error.Status holds it.
	KindHTTPStatus ErrorKind = "http_status"
	// KindTimeout: no answer within the call (or initialize/list) timeout.
	KindTimeout ErrorKind = "timeout"
	// KindSessionExpired: the backend no longer knows the session (HTTP 404)
	// even after one re-initialization.
	KindSessionExpired ErrorKind = "session_expired"
	// KindInvalidResponse: malformed JSON, a wrong response id, an oversized
	// or truncated response.
	KindInvalidResponse ErrorKind = "invalid_response"
	// KindCircuitOpen: the call was refused without touching the network
	// (reserved for the circuit breaker).
	KindCircuitOpen ErrorKind = "circuit_open"
	// KindUnhealthy: the backend was left out of a new session because the
	// health monitor finds it unhealthy or unauthenticated.
	KindUnhealthy ErrorKind = "unhealthy"
	// KindClosed: the session or gateway is closing.
	KindClosed ErrorKind = "closed"
	// KindTransport: any other transport failure.
	KindTransport ErrorKind = "transport_error"
	// KindJSONRPCError: the backend answered with a JSON-RPC error. The
	// backend is up; this is not "unavailable".
	KindJSONRPCError ErrorKind = "jsonrpc_error"
	// KindCanceled: the client cancelled the request. Not "unavailable".
	KindCanceled ErrorKind = "canceled"
)

// Unavailable reports whether the kind means the backend could not serve
// the request (as opposed to answering with an error, or the client giving
// up).
func (k ErrorKind) Unavailable() bool {
	return k != KindJSONRPCError && k != KindCanceled
}

// ErrUnavailable matches (errors.Is) every *Error whose kind
// is Unavailable.
var ErrUnavailable = errors.New("backend unavailable")

// Error is a failure of one backend during one operation.
type Error struct {
	// Backend is the configured backend name.
	Backend string
	// Op is the MCP method, e.g. "tools/call" or "initialize".
	Op string
	// Kind classifies the failure.
	Kind ErrorKind
	// Cause is the short human cause, e.g. "HTTP 403 Forbidden" or
	// "timed out after 30s".
	Cause string
	// Status is the backend's HTTP status when Kind is KindHTTPStatus (or
	// when one was seen), else 0.
	Status int
	// Code is the JSON-RPC error code when Kind is KindJSONRPCError.
	Code int
	// Err is the underlying error.
	Err error
}

// Error renders `backend "beta" unavailable: <cause>` (or
// `backend "beta" error: <message>` for KindJSONRPCError).
func (e *Error) Error() string {
	switch e.Kind {
	case KindJSONRPCError:
		return fmt.Sprintf("backend %q error: %s", e.Backend, e.Cause)
	case KindCanceled:
		return fmt.Sprintf("backend %q call canceled: %s", e.Backend, e.Cause)
	default:
		return fmt.Sprintf("backend %q unavailable: %s", e.Backend, e.Cause)
	}
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnavailable) true for unavailable kinds.
func (e *Error) Is(target error) bool {
	return target == ErrUnavailable && e.Kind.Unavailable()
}

// Meta is the _meta added to an isError tool result for this error.
func (e *Error) Meta() map[string]any {
	return map[string]any{"vmcp/backend": e.Backend, "vmcp/errorKind": string(e.Kind)}
}

// Data is the JSON-RPC error data for this error.
func (e *Error) Data() map[string]any {
	d := map[string]any{"backend": e.Backend, "kind": string(e.Kind)}
	if e.Status != 0 {
		d["status"] = e.Status
	}
	if e.Code != 0 {
		d["code"] = e.Code
	}
	return d
}
