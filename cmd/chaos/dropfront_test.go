package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"
)

// startDropFront starts a fixture gateway in front of a real one (gateway,
// its MCP URL) that never answers a failed or stalled tools/call: it closes
// the client's connection with no response at all, as toolhive's vmcp does
// for a stalled call at 30 s. A tools/call the real gateway answers with a
// result within stallAfter is passed on; one it answers with an error
// (HTTP >= 400, a JSON-RPC error, an isError result), or not within
// stallAfter, is dropped. Every other request passes through.
func startDropFront(t *testing.T, gateway string, stallAfter time.Duration) string {
	t.Helper()
	u, err := url.Parse(gateway)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	rp.FlushInterval = -1
	drop := func(w http.ResponseWriter) {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil {
			drop(w)
			return
		}
		if r.Method != http.MethodPost || !bytes.Contains(body, []byte(`"tools/call"`)) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			rp.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), stallAfter)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, gateway, bytes.NewReader(body))
		if err != nil {
			drop(w)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		var answer []byte
		if err == nil {
			answer, err = io.ReadAll(io.LimitReader(resp.Body, 4<<20))
			resp.Body.Close()
		}
		if err != nil || resp.StatusCode >= 400 || bytes.Contains(answer, []byte(`"isError":true`)) || bytes.Contains(answer, []byte(`"error":{`)) {
			drop(w)
			return
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(answer)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL + u.Path
}
