package backend

import (
	"fmt"
	"runtime/debug"
)

// clientPanicError is a panic raised inside a backend request (in mcp-go's
// client or transport, or in the request function) and recovered by
// guarded. Invoke classifies it like any other failure (so it names the
// backend), logs its stack and retires the connection.
type clientPanicError struct {
	value any
	stack []byte
}

func (e *clientPanicError) Error() string {
	return fmt.Sprintf("request failed inside the MCP client: %v", e.value)
}

// guarded runs fn, turning a panic in it into a *clientPanicError. A
// backend request must end as a backend error, never as a crash of the
// gateway (Dial runs on plain goroutines) nor as a panic that mcp-go's
// server recovers in a tool handler ("internal error: panic recovered").
func guarded(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &clientPanicError{value: r, stack: debug.Stack()}
		}
	}()
	return fn()
}
