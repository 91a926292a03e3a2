package vmcp_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

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
