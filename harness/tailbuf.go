package harness

import (
	"strings"
	"sync"
)

// tailBuffer is an io.Writer that keeps the last max bytes written, for
// error messages that quote a process's stderr.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

// Write keeps the tail of p.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// String returns what is kept, trimmed.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// quoteTail formats a stderr tail for an error message ("" when empty).
func quoteTail(s string) string {
	if s == "" {
		return ""
	}
	return "\nstderr:\n" + s
}
