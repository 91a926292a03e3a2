package history

import (
	"context"
	"errors"
	"io"
	"strings"
	"syscall"

	"github.com/mark3labs/mcp-go/mcp"
)

// Unanswered says why a call's error is no answer at all: "dropped" when
// the connection ended (EOF, reset, an event stream that ended) before the
// gateway answered, "refused" when no connection could be made. It
// returns "" for an answer (a JSON-RPC error, an HTTP status) and for the
// client's own deadline or cancellation.
func Unanswered(err error) string {
	switch {
	case err == nil, errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return ""
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return "dropped"
	}
	// A JSON-RPC error is an answer, whatever its message quotes (a
	// gateway passing "connection reset by peer" on from its backend
	// answered; it did not drop the call).
	for _, answered := range jsonRPCAnswers {
		if errors.Is(err, answered) {
			return ""
		}
	}
	// mcp-go's words for an event stream that ended before the response,
	// and net/http's for a connection closed under a request.
	msg := err.Error()
	for _, s := range []string{"unexpected nil response", "failed to resume the SSE stream", "server closed idle connection", "connection reset by peer"} {
		if strings.Contains(msg, s) {
			return "dropped"
		}
	}
	return ""
}

// jsonRPCAnswers are the errors mcp-go's client returns for a JSON-RPC
// error answer with a standard code.
var jsonRPCAnswers = []error{mcp.ErrParseError, mcp.ErrInvalidRequest, mcp.ErrMethodNotFound, mcp.ErrInvalidParams,
	mcp.ErrInternalError, mcp.ErrRequestInterrupted, mcp.ErrResourceNotFound}
