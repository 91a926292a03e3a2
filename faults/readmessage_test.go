package faults_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
)

// closedAfterEOF is an inbound body as the HTTP/1 server holds it: once the
// answer starts, the server closes it and any further read fails.
type closedAfterEOF struct {
	r      io.Reader
	closed bool
}

var errClosed = errors.New("http: invalid Read on closed Body")

func (b *closedAfterEOF) Read(p []byte) (int, error) {
	if b.closed {
		return 0, errClosed
	}
	return b.r.Read(p)
}

func (b *closedAfterEOF) Close() error { b.closed = true; return nil }

// TestReadMessageBodyOutlivesInbound: a body ReadMessage read whole is
// handed on as its own copy, readable (to EOF, and again after EOF, as a
// transport checks for extra bytes) after the inbound body is closed.
func TestReadMessageBodyOutlivesInbound(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}`
	in := &closedAfterEOF{r: strings.NewReader(body)}
	r, _ := http.NewRequest(http.MethodPost, "http://x/mcp", nil)
	r.Body = in
	msg, ok := faults.ReadMessage(r)
	if !ok || msg.Method != "tools/call" || msg.Name != "echo" {
		t.Fatalf("ReadMessage: %+v ok=%v, want tools/call echo", msg, ok)
	}
	_ = in.Close() // the server starts the answer
	got, err := io.ReadAll(r.Body)
	if err != nil || string(got) != body {
		t.Fatalf("body handed on: %q, %v; want %q and no error", got, err, body)
	}
	if n, err := r.Body.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("read after EOF: %d, %v; want 0, EOF (not the closed inbound body)", n, err)
	}
	if err := r.Body.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// TestReadMessageLongBody: a body over the 16 MiB ReadMessage reads is
// handed on whole (what was read, then the rest), and an exactly 16 MiB one
// too.
func TestReadMessageLongBody(t *testing.T) {
	for _, size := range []int{16 << 20, 16<<20 + 10} {
		prefix := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`
		body := prefix + strings.Repeat("x", size-len(prefix)-3) + `"}}`
		r, _ := http.NewRequest(http.MethodPost, "http://x/mcp", strings.NewReader(body))
		if _, ok := faults.ReadMessage(r); !ok {
			t.Fatalf("%d bytes: ReadMessage failed", size)
		}
		got, err := io.ReadAll(r.Body)
		if err != nil || len(got) != size || string(got) != body {
			t.Fatalf("%d bytes: handed on %d bytes, %v; want the whole body", size, len(got), err)
		}
	}
}
