package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// connCounter counts the connections a test server accepted.
type connCounter struct {
	mu    sync.Mutex
	conns map[net.Conn]bool
}

func (cc *connCounter) track(c net.Conn, s http.ConnState) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if s == http.StateNew {
		cc.conns[c] = true
	}
}

func (cc *connCounter) count() int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return len(cc.conns)
}

// TestRawClientReusesAndRecovers: the direct client sends the calls of a
// connection one after another on one kept-alive connection; one the
// backend closed while idle (its idle timeout, a restart) is not used,
// and an answer with "Connection: close" is not followed by another
// request on its connection: no call fails for either.
func TestRawClientReusesAndRecovers(t *testing.T) {
	t.Parallel()
	b := &scriptedBackend{}
	b.set(jsonAnswer(`{"jsonrpc":"2.0","id":%s,"result":{"ok":true}}`))
	cc := &connCounter{conns: map[net.Conn]bool{}}
	srv := httptest.NewUnstartedServer(b)
	srv.Config.ConnState = cc.track
	srv.Start()
	t.Cleanup(srv.Close)
	c := dialScriptedAt(t, srv.URL, 5*time.Second)
	if c.direct == nil {
		t.Fatal("the direct client is not used for a plain http:// backend")
	}
	call := func(what string) {
		t.Helper()
		if result, be, _ := forwardCall(c, 5*time.Second); be != nil || string(result) != `{"ok":true}` {
			t.Fatalf("%s: %s, %v", what, result, be)
		}
	}
	call("first call")
	n := cc.count()
	for i := range 20 {
		call("call " + string(rune('a'+i)))
	}
	if got := cc.count(); got != n {
		t.Errorf("20 calls one after another opened %d more connections, want 0", got-n)
	}

	srv.CloseClientConnections() // the backend drops its idle connections
	time.Sleep(50 * time.Millisecond)
	call("after the backend closed the idle connections")

	b.set(func(w http.ResponseWriter, r *http.Request, id string) {
		w.Header().Set("Connection", "close")
		jsonAnswer(`{"jsonrpc":"2.0","id":%s,"result":{"ok":true}}`)(w, r, id)
	})
	n = cc.count()
	call("connection: close 1") // on the kept connection
	call("connection: close 2")
	call("connection: close 3")
	if got := cc.count(); got != n+2 {
		t.Errorf("three answers with Connection: close: %d new connections, want 2", got-n)
	}
}

// TestRawClientChunkedPlainAnswer: a plain answer the direct client cannot
// check in its buffer (chunked here) is read with net/http's parser and
// still taken without mcp-go; the connection is reused after it.
func TestRawClientChunkedPlainAnswer(t *testing.T) {
	t.Parallel()
	b := &scriptedBackend{}
	b.set(func(w http.ResponseWriter, _ *http.Request, id string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,`, id)
		w.(http.Flusher).Flush() // no Content-Length: chunked
		fmt.Fprint(w, `"result":{"chunked":true}}`)
	})
	cc := &connCounter{conns: map[net.Conn]bool{}}
	srv := httptest.NewUnstartedServer(b)
	srv.Config.ConnState = cc.track
	srv.Start()
	t.Cleanup(srv.Close)
	c := dialScriptedAt(t, srv.URL, 5*time.Second)
	n := -1
	for i := range 3 {
		before := c.handedOver.Load()
		result, be, _ := forwardCall(c, 5*time.Second)
		if be != nil || string(result) != `{"chunked":true}` {
			t.Fatalf("call %d: %s, %v", i, result, be)
		}
		if c.handedOver.Load() != before {
			t.Errorf("call %d: the chunked plain answer was handed to mcp-go", i)
		}
		if i == 0 {
			n = cc.count()
		}
	}
	if got := cc.count(); got != n {
		t.Errorf("%d more connections after the first call, want 0", got-n)
	}
}

// TestRawClientConcurrentCalls: calls at once on one connection, a tenth
// stalled past a short deadline, each get their own answer (another's
// would be a wrong id) or a timeout, and the connection serves a call
// afterwards. An informational answer before the answer
// is skipped, as net/http does.
func TestRawClientConcurrentCalls(t *testing.T) {
	t.Parallel()
	b := &scriptedBackend{}
	b.set(func(w http.ResponseWriter, r *http.Request, id string) {
		if strings.HasSuffix(id, "7") {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		if strings.HasSuffix(id, "3") {
			w.Header().Set("Link", "</x>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
		}
		jsonAnswer(`{"jsonrpc":"2.0","id":%s,"result":{"id":%[1]s}}`)(w, r, id)
	})
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	c := dialScriptedAt(t, srv.URL, 5*time.Second)
	var wg sync.WaitGroup
	var timeouts, answered atomic.Int64
	for range 16 {
		wg.Go(func() {
			for range 25 {
				var result json.RawMessage
				be := c.Invoke(context.Background(), "tools/call", 200*time.Millisecond, func(ctx context.Context) (err error) {
					result, err = c.Forward(ctx, "tools/call", json.RawMessage(`{"name":"echo"}`))
					return err
				})
				switch {
				case be != nil && be.Kind == KindTimeout:
					timeouts.Add(1)
				case be != nil:
					t.Errorf("call: %v", be) // another call's answer would be a wrong id
				default:
					answered.Add(1)
					var got struct{ ID int64 }
					if json.Unmarshal(result, &got) != nil || got.ID < forwardIDBase {
						t.Errorf("result %s is not an answer of this connection", result)
					}
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d answered, %d timed out", answered.Load(), timeouts.Load())
	if answered.Load() == 0 {
		t.Fatal("no call was answered")
	}
	if result, be, _ := forwardCall(c, 5*time.Second); be != nil || !strings.HasPrefix(string(result), `{"id":`) {
		t.Errorf("a call after the load: %s, %v", result, be)
	}
}

// TestRawClientOpenStreamAndErrorStatus: an SSE answer whose stream stays
// open after the response ends the call at the response, not at the
// deadline (closing the body does not read the stream on), and its
// connection is not reused; an error status read to its end (a 403)
// leaves its connection for the next call.
func TestRawClientOpenStreamAndErrorStatus(t *testing.T) {
	t.Parallel()
	const timeout = 3 * time.Second
	b := &scriptedBackend{}
	b.set(func(w http.ResponseWriter, r *http.Request, id string) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"sse\":true}}\n\n", id)
		w.(http.Flusher).Flush()
		select { // the stream stays open
		case <-r.Context().Done():
		case <-time.After(2 * timeout):
		}
	})
	cc := &connCounter{conns: map[net.Conn]bool{}}
	srv := httptest.NewUnstartedServer(b)
	srv.Config.ConnState = cc.track
	srv.Start()
	t.Cleanup(srv.Close)
	c := dialScriptedAt(t, srv.URL, timeout)
	result, be, d := forwardCall(c, timeout)
	if be != nil || string(result) != `{"sse":true}` {
		t.Fatalf("got %s, %v", result, be)
	}
	if d > timeout/2 {
		t.Errorf("the call ended after %v, the response came at once", d)
	}

	b.set(func(w http.ResponseWriter, _ *http.Request, _ string) { http.Error(w, "go away", http.StatusForbidden) })
	n := -1
	for i := range 3 {
		if _, be, _ := forwardCall(c, timeout); be == nil || be.Kind != KindHTTPStatus || be.Status != http.StatusForbidden {
			t.Fatalf("403 %d: got %v", i, be)
		}
		if i == 0 {
			n = cc.count()
		}
	}
	if got := cc.count(); got != n {
		t.Errorf("%d more connections for two more 403s, want 0", got-n)
	}
}
