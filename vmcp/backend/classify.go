package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// errConnDead is the cancel cause of a call whose backend connection died.
var errConnDead = errors.New("backend connection lost")

// ErrSessionClosing is the cancel cause (context.WithCancelCause) of calls
// cut off by a closing session or gateway: they are classified as
// KindClosed ("session closed"). A Conn being closed uses it too.
var ErrSessionClosing = errors.New("session closing")

// openDeadline is the cancel cause of a backend opening (initialize and
// lists, the legacy-then-negotiated fallback included) that took longer
// than the initialize timeout d.
type openDeadline struct{ d time.Duration }

func (e *openDeadline) Error() string { return "backend opening timed out after " + e.d.String() }

// WithOpenDeadline bounds a whole backend opening (dial, handshake and the
// first lists) by d: a request cut by it is classified as KindTimeout
// ("timed out after d"), not as a client cancel.
func WithOpenDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, &openDeadline{d: d})
}

// WaitError is the error of a wait for backend name (e.g. for a shared
// re-initialization) during operation op that ctx ended first: KindTimeout
// when its cause is ErrCallTimeout (reported as timeout), KindClosed for
// ErrSessionClosing, otherwise KindCanceled (the client gave up).
func WaitError(ctx context.Context, name, op string, timeout time.Duration) *Error {
	cause := context.Cause(ctx)
	f := failure{err: cause, cause: cause, timeout: timeout, timedOut: errors.Is(cause, ErrCallTimeout)}
	if !f.timedOut && !errors.Is(cause, ErrSessionClosing) {
		f.parentErr = ctx.Err()
	}
	be := classify(f)
	be.Backend, be.Op = name, op
	return be
}

// failure is what a call attempt observed, for classify.
type failure struct {
	err       error
	parentErr error         // the caller's context error, if it ended
	cause     error         // context.Cause of the attempt's context
	timeout   time.Duration // the attempt's timeout
	timedOut  bool          // the attempt's own deadline passed
	trace     traceSnapshot
	deadErr   error // why the connection died, if it did
	stdio     bool
	handshake bool // the request was initialize: a 404 there is no expired session
}

// classify turns a failed attempt into a *Error (without Backend and
// Op, which the caller fills in).
func classify(f failure) *Error {
	be := &Error{Err: f.err}
	set := func(k ErrorKind, cause string) *Error {
		be.Kind, be.Cause = k, cause
		return be
	}
	switch {
	case errors.Is(f.cause, ErrSessionClosing),
		errors.Is(f.cause, errConnDead) && errors.Is(f.deadErr, ErrSessionClosing),
		errors.Is(f.err, ErrSessionClosing):
		return set(KindClosed, "session closed")
	case errors.Is(f.parentErr, context.DeadlineExceeded):
		// The caller's own deadline (a keepalive probe's timeout, a Go
		// caller's context) passed: a stall, not a client giving up.
		be.Err = errors.Join(f.err, f.parentErr)
		return set(KindTimeout, "timed out: the caller's deadline passed")
	case f.parentErr != nil:
		be.Err = errors.Join(f.err, f.parentErr)
		return set(KindCanceled, "canceled by the client")
	case f.trace.invalid != nil:
		be.Err = errors.Join(f.trace.invalid, f.err)
		return set(KindInvalidResponse, f.trace.invalid.Error())
	case errors.Is(f.cause, errConnDead) && f.deadErr != nil:
		d := classify(failure{err: f.deadErr, stdio: f.stdio})
		d.Err = errors.Join(f.deadErr, f.err)
		return d
	case f.timedOut:
		be.Err = errors.Join(f.err, context.DeadlineExceeded)
		return set(KindTimeout, "timed out after "+f.timeout.String())
	}
	err := f.err
	var hs *httpStatusError
	var inv *invalidResponseError
	var auth *transport.AuthorizationRequiredError
	var dns *net.DNSError
	switch {
	case errors.As(err, &inv):
		return set(KindInvalidResponse, inv.Error())
	case errors.As(err, &hs) && !f.handshake && hs.Status == http.StatusBadRequest &&
		strings.Contains(strings.ToLower(hs.Snippet), "session"):
		// A server that lost the session and says so with a 400 (mcp-go's
		// SSE server answers `400 Invalid session ID` once a stream is
		// gone, others "no valid session") did not execute the request:
		// the same as a 404.
		be.Status = hs.Status
		return set(KindSessionExpired, "session expired (HTTP 400: "+hs.Snippet+")")
	case errors.As(err, &hs):
		be.Status = hs.Status
		return set(KindHTTPStatus, fmt.Sprintf("HTTP %d %s", hs.Status, http.StatusText(hs.Status)))
	case errors.As(err, &auth):
		be.Status = http.StatusUnauthorized
		return set(KindHTTPStatus, "HTTP 401 Unauthorized")
	case f.handshake && f.trace.status == http.StatusNotFound:
		// No session yet: the URL is wrong (or the server is not MCP).
		be.Status = http.StatusNotFound
		return set(KindHTTPStatus, "HTTP 404 Not Found")
	case errors.Is(err, transport.ErrSessionTerminated) || f.trace.status == http.StatusNotFound:
		be.Status = http.StatusNotFound
		return set(KindSessionExpired, "session expired")
	case errors.Is(err, syscall.ECONNREFUSED):
		return set(KindConnectionRefused, "connection refused")
	case errors.As(err, &dns) && dns.IsNotFound:
		return set(KindUnreachable, "unreachable: no such host")
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return set(KindUnreachable, "unreachable: no route to host")
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(f.trace.bodyErr, syscall.ECONNRESET):
		return set(KindConnectionReset, "connection reset")
	case errors.Is(err, syscall.EPIPE):
		return set(KindConnectionReset, "connection reset (broken pipe)")
	case errors.Is(err, context.DeadlineExceeded):
		return set(KindTimeout, "timed out")
	}
	if f.trace.rpcSeen {
		be.Code = f.trace.rpcCode
		return set(KindJSONRPCError, fmt.Sprintf("%s (JSON-RPC error %d)", f.trace.rpcMsg, f.trace.rpcCode))
	}
	if code, msg, ok := jsonRPCError(err); ok {
		be.Code = code
		return set(KindJSONRPCError, fmt.Sprintf("%s (JSON-RPC error %d)", msg, code))
	}
	msg := err.Error()
	switch {
	case f.stdio && (errors.Is(err, transport.ErrTransportClosed) || errors.Is(err, io.EOF)):
		return set(KindConnectionClosed, "process exited")
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(f.trace.bodyErr, io.ErrUnexpectedEOF),
		errors.Is(err, transport.ErrTransportClosed),
		strings.Contains(msg, "connection has been closed"),
		strings.Contains(msg, "server closed the connection"),
		// net/http, when a backend going down closes the pooled connection
		// a POST was just written to (it retries only idempotent requests).
		strings.Contains(msg, "server closed idle connection"):
		return set(KindConnectionClosed, "connection closed")
	case strings.Contains(msg, "timeout waiting for SSE response"), strings.Contains(msg, "timeout waiting for endpoint"):
		// The SSE transport's own timer, set to the attempt's deadline.
		be.Err = errors.Join(err, context.DeadlineExceeded)
		if f.timeout > 0 {
			return set(KindTimeout, "timed out after "+f.timeout.String())
		}
		return set(KindTimeout, "timed out")
	case strings.Contains(msg, "unexpected nil response"):
		if f.trace.bodyErr != nil {
			return set(KindConnectionClosed, "stream cut: "+oneLine(f.trace.bodyErr.Error(), 80))
		}
		return set(KindInvalidResponse, "invalid response: stream ended before the response")
	case strings.Contains(msg, "failed to decode response"), strings.Contains(msg, "failed to unmarshal"),
		strings.Contains(msg, "unexpected content type"), strings.Contains(msg, "response should contain RPC id"):
		return set(KindInvalidResponse, "invalid response: "+oneLine(msg, 120))
	}
	return set(KindTransport, oneLine(msg, 160))
}

// jsonRPCError recognises the errors mcp-go builds from JSON-RPC error
// responses with a known code.
func jsonRPCError(err error) (int, string, bool) {
	codes := []struct {
		sentinel error
		code     int
	}{
		{mcp.ErrParseError, mcp.PARSE_ERROR},
		{mcp.ErrInvalidRequest, mcp.INVALID_REQUEST},
		{mcp.ErrMethodNotFound, mcp.METHOD_NOT_FOUND},
		{mcp.ErrInvalidParams, mcp.INVALID_PARAMS},
		{mcp.ErrInternalError, mcp.INTERNAL_ERROR},
		{mcp.ErrRequestInterrupted, mcp.REQUEST_INTERRUPTED},
		{mcp.ErrResourceNotFound, mcp.RESOURCE_NOT_FOUND},
	}
	for _, c := range codes {
		if errors.Is(err, c.sentinel) {
			msg := err.Error()
			if m, ok := strings.CutPrefix(msg, c.sentinel.Error()+": "); ok {
				msg = m
			}
			return c.code, msg, true
		}
	}
	return 0, "", false
}
