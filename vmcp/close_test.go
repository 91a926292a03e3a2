package vmcp_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// stallingDeleteBackend is an in-test mcp-go backend with real sessions
// whose DELETE never answers (until the test ends).
func stallingDeleteBackend(t *testing.T) (*httptest.Server, chan struct{}) {
	s := server.NewMCPServer("stubborn", "1")
	s.AddTool(mcp.NewTool("echo"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	h := server.NewStreamableHTTPServer(s, server.WithStateful(true))
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			select {
			case <-release:
			case <-time.After(30 * time.Second):
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		close(release)
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv, release
}

// TestCloseBoundedWhenDeleteStalls: closing a session whose backend never
// answers DELETE takes the close timeout, not mcp-go's hard-coded 5s.
func TestCloseBoundedWhenDeleteStalls(t *testing.T) {
	t.Parallel()
	srv, _ := stallingDeleteBackend(t)
	cfg := "name: t\nbackends:\n  - {name: stubborn, url: \"" + srv.URL + "/mcp\", protocol: legacy}\ntimeouts: {close: 300ms}\n"
	g := startGatewayShutByTest(t, cfg)
	c := connect(t, g.URL(), false)
	if res, _ := callTool(t, c, "stubborn_echo", nil); res.IsError {
		t.Fatal(resultText(res))
	}
	start := time.Now()
	if err := g.Shutdown(ctxT(t, 10*time.Second)); err != nil {
		t.Error(err)
	}
	d := time.Since(start)
	t.Logf("shutdown with a backend stalling DELETE took %v (close timeout 300ms)", d)
	if d < 250*time.Millisecond || d > 300*time.Millisecond+atOnceBound {
		t.Errorf("shutdown took %v", d)
	}
}

// TestShutdownReturnsWhenCtxEnds: Shutdown's ctx ends (200ms) before the
// backend connections are closed (the backend stalls DELETE; close timeout
// 2s): Shutdown returns ctx's error at once, and the connections end in
// the background, cut off within the close timeout (goleak checks that at
// the end of the tests).
func TestShutdownReturnsWhenCtxEnds(t *testing.T) {
	t.Parallel()
	srv, _ := stallingDeleteBackend(t)
	cfg := "name: t\nbackends:\n  - {name: stubborn, url: \"" + srv.URL + "/mcp\", protocol: legacy}\ntimeouts: {close: 2s}\n"
	g := startGatewayShutByTest(t, cfg)
	c := connect(t, g.URL(), false)
	if res, _ := callTool(t, c, "stubborn_echo", nil); res.IsError {
		t.Fatal(resultText(res))
	}
	start := time.Now()
	err := g.Shutdown(ctxT(t, 200*time.Millisecond))
	d := time.Since(start)
	t.Logf("shutdown with a 200ms ctx and a backend stalling DELETE (close timeout 1s) returned in %v: %v", d, err)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("shutdown error = %v, want context.DeadlineExceeded", err)
	}
	if d > 1500*time.Millisecond { // returned when its ctx ended, not at the 2s close timeout
		t.Errorf("shutdown took %v after its ctx ended at 200ms", d)
	}
}
