package history

import (
	"context"
	"errors"
	"io"
	"syscall"
)

// Unanswered says, from a typed transport error alone, why a call's
// error is no answer at all: "dropped" when the connection ended (EOF,
// reset), "refused" when no connection could be made, "" otherwise. It
// never reads an error's words (a JSON-RPC error quoting "connection reset
// by peer" is an answer). A recorded call's CallRecord.Unanswered, decided
// from what the wire showed, is the better fact; this is for errors no
// wire was watched for.
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
	return ""
}
