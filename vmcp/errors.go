package vmcp

import "github.com/vmcp-chaos/vmcp-chaos/vmcp/backend"

// The backend errors of the gateway's Go API. They are defined in package
// backend (the backend connection) and re-exported here, so that
// errors.Is(err, vmcp.ErrBackendUnavailable) and errors.As(err,
// &*vmcp.BackendError) keep working for Go users.

// BackendError is a failure of one backend during one operation (see
// backend.Error): Backend, Op, Kind, Cause, Status, Code, Err.
type BackendError = backend.Error

// ErrorKind classifies why a backend call failed (see backend.ErrorKind).
type ErrorKind = backend.ErrorKind

// ErrBackendUnavailable matches (errors.Is) every *BackendError whose kind
// is Unavailable, and a *NoBackendError.
var ErrBackendUnavailable = backend.ErrUnavailable

// Error kinds; see the constants of package backend for their meaning.
const (
	KindConnectionRefused = backend.KindConnectionRefused
	KindUnreachable       = backend.KindUnreachable
	KindConnectionReset   = backend.KindConnectionReset
	KindConnectionClosed  = backend.KindConnectionClosed
	KindHTTPStatus        = backend.KindHTTPStatus
	KindTimeout           = backend.KindTimeout
	KindSessionExpired    = backend.KindSessionExpired
	KindInvalidResponse   = backend.KindInvalidResponse
	KindCircuitOpen       = backend.KindCircuitOpen
	KindUnhealthy         = backend.KindUnhealthy
	KindClosed            = backend.KindClosed
	KindTransport         = backend.KindTransport
	KindJSONRPCError      = backend.KindJSONRPCError
	KindCanceled          = backend.KindCanceled
)
