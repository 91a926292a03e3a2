package vmcp_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/access"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// TestAnonymousRefusesNetworkListen: an anonymous gateway refuses a
// non-loopback listen address unless incomingAuth.allowNetwork says so, with
// an error that says how; loopback and bearer auth are fine. Nothing here
// binds a non-loopback address: the check runs before binding.
func TestAnonymousRefusesNetworkListen(t *testing.T) {
	t.Parallel()
	b := startFake(t, plainBeta)
	cfg, err := vmcp.ParseConfig([]byte(gwConfig("", b)), "gw.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := vmcp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	shutdownOnCleanup(t, g)
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		err := g.Start(ctxT(t, 5*time.Second), addr)
		if !errors.Is(err, access.ErrExposed) {
			t.Fatalf("Start(%q) = %v, want ErrExposed", addr, err)
		}
		for _, how := range []string{"127.0.0.1", "type: bearer", "allowNetwork: true"} {
			if !strings.Contains(err.Error(), how) {
				t.Errorf("Start(%q) error does not say how (%q): %v", addr, how, err)
			}
		}
	}
	if g.Addr() != "" {
		t.Fatalf("refused gateway listens on %s", g.Addr())
	}
	// Loopback is fine, and the gateway then serves.
	if err := g.Start(ctxT(t, 5*time.Second), "127.0.0.1:0"); err != nil {
		t.Fatalf("loopback: %v", err)
	}
	if _, err := tryConnect(g.URL(), false); err != nil {
		t.Fatalf("connect on loopback: %v", err)
	}

	ctx := ctxT(t, 5*time.Second)
	anon := config.IncomingAuth{Type: config.AuthAnonymous}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", "localhost:0", "127.0.0.2:4483"} {
		if err := vmcp.CheckExposure(ctx, anon, addr); err != nil {
			t.Errorf("loopback %q refused: %v", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:4483", "192.0.2.1:4483", ":4483"} {
		if err := vmcp.CheckExposure(ctx, anon, addr); !errors.Is(err, access.ErrExposed) {
			t.Errorf("anonymous %q: err = %v, want ErrExposed", addr, err)
		}
		if err := vmcp.CheckExposure(ctx, config.IncomingAuth{Type: config.AuthAnonymous, AllowNetwork: true}, addr); err != nil {
			t.Errorf("allowNetwork %q refused: %v", addr, err)
		}
		if err := vmcp.CheckExposure(ctx, config.IncomingAuth{Type: config.AuthBearer, Token: "t"}, addr); err != nil {
			t.Errorf("bearer %q refused: %v", addr, err)
		}
	}
}

// TestStatusRedactsURLCredentials: /status never shows user:pass@ from a
// backend URL.
func TestStatusRedactsURLCredentials(t *testing.T) {
	t.Parallel()
	b := startFake(t, plainBeta)
	withCreds := strings.Replace(b.URL(), "http://", "http://alice:s3cret-pw@", 1)
	g := startGateway(t, "backends:\n  - {name: beta, url: \""+withCreds+"\"}\n")
	resp, err := http.Get(strings.TrimSuffix(g.URL(), "/mcp") + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st vmcp.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(st)
	if strings.Contains(string(raw), "s3cret-pw") || strings.Contains(string(raw), "alice") {
		t.Fatalf("/status shows the credentials: %s", raw)
	}
	if len(st.Backends) != 1 || !strings.Contains(st.Backends[0].URL, "[redacted]@") {
		t.Fatalf("backend URL = %+v, want the user information replaced", st.Backends)
	}
}
