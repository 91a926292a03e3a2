package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// smallReadBufferListener gives accepted connections a small, fixed
// receive buffer, so that a peer writing a large request body blocks until
// the handler reads it.
type smallReadBufferListener struct{ net.Listener }

func (l smallReadBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(64 << 10)
	}
	return c, err
}

// TestStreamedAnswerOutlivesRequestWrite: an upstream that starts its SSE
// answer (headers and a first event) before it has read the request body,
// then reads the body and sends the rest. The proxy's transport is still
// writing the body when the answer starts, and reads the body once more
// after its Content-Length bytes (to check it is not longer). The HTTP/1
// server closes the inbound body when the proxy starts the answer; if the
// upstream request's body still read from it, that last read failed, the
// transport closed the upstream connection and the client's stream was cut
// ("unexpected EOF"): the load-dependent TestConformance failure on the
// progress tool, made certain here by a body larger than the socket buffers.
// Two sizes: one the fault engine reads whole (16 MiB limit), one whose rest
// streams from the inbound body.
func TestStreamedAnswerOutlivesRequestWrite(t *testing.T) {
	t.Parallel()
	for _, size := range []int{12 << 20, 16<<20 + 100<<10} {
		t.Run(fmt.Sprintf("%dKiB", size>>10), func(t *testing.T) {
			testStreamedAnswerOutlivesRequestWrite(t, size)
		})
	}
}

func testStreamedAnswerOutlivesRequestWrite(t *testing.T, size int) {
	release := make(chan struct{})
	got := make(chan int64, 1)
	upstream := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.EnableFullDuplex(); err != nil {
			t.Errorf("upstream: full duplex: %v", err)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
		_ = rc.Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		n, _ := io.Copy(io.Discard, r.Body)
		got <- n
		// The proxy's transport is done with the request now; a proxy that
		// loses the connection over it does so at once. Give it the time.
		select {
		case <-r.Context().Done():
			return
		case <-time.After(300 * time.Millisecond):
		}
		_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":2}}\n\n")
		_ = rc.Flush()
		_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = upstream.Serve(smallReadBufferListener{ln}) }()
	t.Cleanup(func() { _ = upstream.Close() })
	p := startProxy(t, "http://"+ln.Addr().String()+"/mcp")

	prefix := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big","arguments":{"blob":"`
	suffix := `"}}}`
	body := prefix + strings.Repeat("x", size-len(prefix)-len(suffix)) + suffix
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL(), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		close(release)
		t.Fatalf("POST through the proxy: %v", err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	close(release) // the answer has started: let the upstream read the body
	if err != nil || !strings.Contains(first, "event: message") {
		t.Fatalf("first event line: %q, %v", first, err)
	}
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("expected the whole SSE answer (progress 1, progress 2, result), seen it cut after %d bytes: %v (%s)\n%s%s",
			len(first)+len(rest), err, time.Since(start).Round(time.Millisecond), first, rest)
	}
	if !bytes.Contains(rest, []byte(`"progress":2`)) || !bytes.Contains(rest, []byte(`"text":"done"`)) {
		t.Fatalf("expected progress 2 and the result, seen:\n%s%s", first, rest)
	}
	select {
	case n := <-got:
		if n != int64(size) {
			t.Errorf("upstream read %d body bytes, want %d", n, size)
		}
	case <-ctx.Done():
		t.Fatal("upstream never read the body")
	}
}
