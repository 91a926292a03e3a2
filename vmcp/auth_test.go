package vmcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestBearerAuth: with incomingAuth bearer, only the token read from the
// configured variable opens a session and reads /status.
//
// Serial: it sets the token's environment variable (t.Setenv), which the
// parallel tests must not see.
func TestBearerAuth(t *testing.T) {
	t.Setenv("VMCP_TEST_TOKEN", "tok-123")
	b := startFake(t, plainBeta)
	g := startGateway(t, gwConfig("incomingAuth: {type: bearer, tokenEnv: VMCP_TEST_TOKEN}\n", b))
	if _, err := tryConnect(g.URL(), false); err == nil {
		t.Fatal("connected without a token")
	}
	tr, _ := transport.NewStreamableHTTP(g.URL(), transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer tok-123"}))
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatalf("with token: %v", err)
	}
	base := strings.TrimSuffix(g.URL(), "/mcp")
	for _, tc := range []struct {
		auth string
		want int
	}{{"", http.StatusUnauthorized}, {"Bearer nope", http.StatusUnauthorized}, {"Bearer tok-123", http.StatusOK}} {
		req, _ := http.NewRequest(http.MethodGet, base+"/status", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("/status with %q: %d, want %d", tc.auth, resp.StatusCode, tc.want)
		}
	}
}

// TestAdminEndpointsLoopbackOnly: without bearer auth the admin endpoints
// answer loopback clients only; with it, the token is what counts.
//
// Serial: it sets the token's environment variable (t.Setenv).
func TestAdminEndpointsLoopbackOnly(t *testing.T) {
	b := startFake(t, plainBeta)
	for _, tc := range []struct {
		name, extra, remote, auth string
		want                      int
	}{
		{"anonymous, loopback v4", "", "127.0.0.1:50000", "", http.StatusOK},
		{"anonymous, loopback v6", "", "[::1]:50000", "", http.StatusOK},
		{"anonymous, remote", "", "203.0.113.7:50000", "", http.StatusForbidden},
		{"anonymous, remote with a token", "", "203.0.113.7:50000", "Bearer tok-123", http.StatusForbidden},
		{"bearer, remote with the token", "incomingAuth: {type: bearer, tokenEnv: VMCP_ADMIN_TOKEN}\n", "203.0.113.7:50000", "Bearer tok-123", http.StatusOK},
		{"bearer, remote without", "incomingAuth: {type: bearer, tokenEnv: VMCP_ADMIN_TOKEN}\n", "203.0.113.7:50000", "", http.StatusUnauthorized},
		{"bearer, loopback without", "incomingAuth: {type: bearer, tokenEnv: VMCP_ADMIN_TOKEN}\n", "127.0.0.1:50000", "", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("VMCP_ADMIN_TOKEN", "tok-123")
			g := startGateway(t, gwConfig(tc.extra, b))
			for _, path := range []string{"/status", "/api/sessions", "/api/sessions/nope", "/api/backends/health"} {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.RemoteAddr = tc.remote
				if tc.auth != "" {
					req.Header.Set("Authorization", tc.auth)
				}
				rec := httptest.NewRecorder()
				g.ServeHTTP(rec, req)
				want := tc.want
				if want == http.StatusOK && path == "/api/sessions/nope" {
					want = http.StatusNotFound // admitted; no such session
				}
				if rec.Code != want {
					t.Errorf("GET %s from %s (auth %q): %d, want %d", path, tc.remote, tc.auth, rec.Code, want)
				}
			}
		})
	}
}
