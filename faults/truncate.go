package faults

import "net/http"

// KindTruncate serves the request, sends the status, the headers and the
// first `size` bytes of the answer's body, then closes the connection (the
// client sees the body end early). On an SSE session stream use malformed
// truncated_sse; on stdio use malformed invalid_json.
const KindTruncate Kind = "truncate"

// Truncate are the parameters of truncate.
type Truncate struct {
	Size Size `yaml:"size,omitempty" json:"size,omitempty"` // the bytes of the answer's body to send
}

func init() {
	Register(Spec{Kind: KindTruncate, Order: 100, New: func() Params { return &Truncate{} },
		NotOn: map[Transport]string{TransportSSE: "the answer goes to the session stream: use malformed truncated_sse"}})
}

// Validate implements Params.
func (p *Truncate) Validate(c *Check) error {
	if p.Size <= 0 || p.Size > 1<<30 {
		return c.Errf("size", "required: the bytes of the answer to send, in 1B..1GiB, such as 100 or \"4KiB\"")
	}
	return nil
}

// HTTP implements Params.
func (p *Truncate) HTTP(x *Exchange) bool {
	tw := &truncWriter{ResponseWriter: x.W, left: int64(p.Size)}
	x.Next.ServeHTTP(tw, x.R)
	if !tw.closed {
		tw.abort()
	}
	return false
}

// truncWriter passes the first `left` body bytes, then closes the connection.
type truncWriter struct {
	http.ResponseWriter
	left   int64
	closed bool
}

func (t *truncWriter) Write(p []byte) (int, error) {
	if t.closed {
		return len(p), nil
	}
	n := int64(len(p))
	if n > t.left {
		p = p[:t.left]
	}
	t.left -= int64(len(p))
	if _, err := t.ResponseWriter.Write(p); err != nil {
		return 0, err
	}
	if t.left == 0 {
		t.abort()
	}
	return int(n), nil
}

func (t *truncWriter) abort() {
	t.closed = true
	_ = http.NewResponseController(t.ResponseWriter).Flush()
	AbortConn(t.ResponseWriter, false)
}

// Flush implements http.Flusher until the connection is closed.
func (t *truncWriter) Flush() {
	if !t.closed {
		_ = http.NewResponseController(t.ResponseWriter).Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (t *truncWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }
