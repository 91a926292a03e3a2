package redact

import (
	"bytes"
	"io"
	"sync"
)

// Writer redacts (Text) what is written through it, line by line: a
// complete line goes out at once, a partial one waits for its end (or for
// Flush). It is safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer in front of w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write redacts and writes every complete line of p, holding the rest.
// It reports len(p) written unless the underlying writer fails.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	i := bytes.LastIndexByte(w.buf, '\n')
	if i < 0 {
		return len(p), nil
	}
	if _, err := io.WriteString(w.w, Text(string(w.buf[:i+1]))); err != nil {
		return 0, err
	}
	w.buf = append(w.buf[:0], w.buf[i+1:]...)
	return len(p), nil
}

// Flush redacts and writes a held partial line.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) == 0 {
		return nil
	}
	_, err := io.WriteString(w.w, Text(string(w.buf)))
	w.buf = w.buf[:0]
	return err
}
