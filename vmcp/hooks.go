package vmcp

import "time"

// CallEvent describes one finished backend request made on behalf of a
// client (or while opening a session).
type CallEvent struct {
	// Backend is the backend's configured name.
	Backend string
	// Op is the MCP method, e.g. "tools/call" or "initialize".
	Op string
	// Session is the client session id ("" for the shared pool used by
	// stateless clients).
	Session string
	// Duration is how long the request took, including a re-initialization
	// and its retry.
	Duration time.Duration
	// Err is nil on success. A backend's own tool error (isError) is a
	// success here.
	Err *BackendError
}

// Observer is told about every backend request. The health monitor and
// metrics hook in here. ObserveCall must not block.
type Observer interface {
	ObserveCall(CallEvent)
}

// Gate may refuse a backend request before it touches the network, as a
// circuit breaker does. Admit returns a non-nil *BackendError (typically of
// kind KindCircuitOpen) to refuse, or a function the gateway calls exactly
// once with the outcome of the admitted request.
type Gate interface {
	Admit(backend, op string) (done func(err *BackendError), refused *BackendError)
}
