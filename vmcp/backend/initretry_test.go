package backend

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// An initialize sent on a kept-alive connection that the backend dropped
// (restarted at the same address: the request is written, then the
// connection ends without an answer) is sent again on a new connection;
// another request is not (it may have acted).
func TestInitializeIsReplayedOnADeadKeptAliveConnection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		method   string
		replayed bool
	}{{"initialize", true}, {"tools/call", false}} {
		t.Run(strings.ReplaceAll(tc.method, "/", "_"), func(t *testing.T) {
			t.Parallel()
			var n atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if n.Add(1) == 2 { // the second request: drop the connection unanswered
					conn, _, err := w.(http.Hijacker).Hijack()
					if err == nil {
						conn.Close()
					}
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
			}))
			defer srv.Close()
			base := &http.Transport{MaxIdleConnsPerHost: 1}
			defer base.CloseIdleConnections()
			ct := &captureTransport{base: base, maxBytes: 1 << 20}
			client := &http.Client{Transport: ct, Timeout: 10 * time.Second}
			post := func(method string) error {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{}}`
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, bytes.NewReader([]byte(body)))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					return err
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				return resp.Body.Close()
			}
			if err := post("ping"); err != nil { // opens the kept-alive connection
				t.Fatal(err)
			}
			err := post(tc.method)
			if tc.replayed && err != nil {
				t.Fatalf("%s on a dropped kept-alive connection: %v, want it sent again on a new one", tc.method, err)
			}
			if !tc.replayed && err == nil {
				t.Fatalf("%s on a dropped kept-alive connection was sent again (%d requests): it may have acted", tc.method, n.Load())
			}
		})
	}
}
