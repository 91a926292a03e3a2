package proxy_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/proxy"
	"github.com/vmcp-chaos/vmcp-chaos/proxy/proxytest"
)

func admin(t *testing.T, method, url, body string, token ...string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if len(token) > 0 {
		req.Header.Set("Authorization", "Bearer "+token[0])
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return resp.StatusCode, m
}

// toolsListStatus posts tools/list without a session (the backend answers
// 400 for a missing session; a fault answers its own status).
func toolsListStatus(t *testing.T, url string) int {
	t.Helper()
	return post(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`).StatusCode
}

const fault503 = `[{"kind": "http_status", "status": 503, "match": {"method": "tools/list"}}]`

// TestLeaseExpiresWithoutRenewal: faults set with a TTL are cleared when
// nobody renews the lease, and traffic passes again.
func TestLeaseExpiresWithoutRenewal(t *testing.T) {
	t.Parallel()
	b := startBackend(t, "alpha", proxytest.StreamableHTTP)
	p := startProxy(t, b.URL)
	base := toolsListStatus(t, p.URL())
	if base == 503 {
		t.Fatalf("503 before any fault")
	}
	code, body := admin(t, "PUT", p.AdminURL()+"/faults?ttl=400ms", fault503)
	if code != 200 || body["lease"].(map[string]any)["active"] != true {
		t.Fatalf("PUT /faults: %d %v", code, body)
	}
	if got := toolsListStatus(t, p.URL()); got != 503 {
		t.Fatalf("with the fault: %d, want 503", got)
	}
	gomega.NewWithT(t).Eventually(p.Engine().Len).WithTimeout(5*time.Second).WithPolling(20*time.Millisecond).
		Should(gomega.BeZero(), "faults still set after the lease ran out")
	if got := toolsListStatus(t, p.URL()); got != base {
		t.Fatalf("after the lease expired: %d, want %d", got, base)
	}
	_, lease := admin(t, "GET", p.AdminURL()+"/lease", "")
	if lease["active"] != false || lease["expired"] != float64(1) {
		t.Fatalf("lease after expiry: %v", lease)
	}
	// Renewing a lease that is gone is refused: the controller learns its
	// faults are no longer in force.
	if code, _ := admin(t, "POST", p.AdminURL()+"/lease", ""); code != http.StatusConflict {
		t.Fatalf("renew after expiry: %d, want 409", code)
	}
}

// TestLeaseRenewedHoldsFaults: renewals keep the faults for longer than
// one TTL; DELETE ends the lease without an expiry.
func TestLeaseRenewedHoldsFaults(t *testing.T) {
	t.Parallel()
	b := startBackend(t, "alpha", proxytest.StreamableHTTP)
	p := startProxy(t, b.URL)
	// A TTL a loaded machine cannot outwait between two renewals (a 300 ms
	// TTL expired under load average 13), held for over two TTLs.
	const ttl = 2 * time.Second
	if code, body := admin(t, "PUT", p.AdminURL()+"/faults?ttl="+ttl.String(), fault503); code != 200 {
		t.Fatalf("PUT: %d %v", code, body)
	}
	end := time.Now().Add(2*ttl + 500*time.Millisecond)
	for time.Now().Before(end) {
		if code, body := admin(t, "POST", p.AdminURL()+"/lease", ""); code != 200 {
			t.Fatalf("renew: %d %v", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := toolsListStatus(t, p.URL()); got != 503 {
		t.Fatalf("renewed fault not in force: %d", got)
	}
	if code, _ := admin(t, "DELETE", p.AdminURL()+"/faults", ""); code != 200 {
		t.Fatal("DELETE failed")
	}
	if l := p.Lease(); l.Active || l.Expired != 0 {
		t.Fatalf("lease after DELETE: %+v", l)
	}
}

func TestAdminBadInput(t *testing.T) {
	t.Parallel()
	b := startBackend(t, "alpha", proxytest.StreamableHTTP)
	p := startProxy(t, b.URL)
	for _, c := range []struct{ path, body, want string }{
		{"/faults?ttl=forever", fault503, "ttl"},
		{"/faults?ttl=-1s", fault503, "ttl"},
		{"/faults?ttl=1h", fault503, "ttl"},
		{"/faults", `[{"kind": "http_status", "status": 1000}]`, "faults[0].status"},
		{"/faults", `[{"kind": "stal"}]`, "faults[0].kind"},
	} {
		code, body := admin(t, "PUT", p.AdminURL()+c.path, c.body)
		if code != 400 || !strings.Contains(body["error"].(string), c.want) {
			t.Errorf("PUT %s %s: %d %v, want 400 naming %s", c.path, c.body, code, body, c.want)
		}
	}
	if p.Engine().Len() != 0 || p.Lease().Active {
		t.Fatal("a refused body changed the faults")
	}
}

func TestAdminToken(t *testing.T) {
	t.Parallel()
	if _, err := proxy.New(proxy.Options{Upstream: "ftp://x"}); err == nil {
		t.Fatal("ftp upstream accepted")
	}
	p, err := proxy.New(proxy.Options{Upstream: "http://127.0.0.1:1/mcp", Admin: "0.0.0.0:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "admin token") {
		t.Fatalf("non-loopback admin without token: %v", err)
	}
	b := startBackend(t, "alpha", proxytest.StreamableHTTP)
	pt := startProxy(t, b.URL, func(o *proxy.Options) { o.AdminToken = "s3cret" })
	if code, _ := admin(t, "GET", pt.AdminURL()+"/faults", ""); code != 401 {
		t.Fatalf("no token: %d, want 401", code)
	}
	if code, _ := admin(t, "GET", pt.AdminURL()+"/faults", "", "s3cret"); code != 200 {
		t.Fatalf("token: %d, want 200", code)
	}
}

// TestRequestLog: GET /requests lists proxied requests with their JSON-RPC
// method, tool, status and the fault applied.
func TestRequestLog(t *testing.T) {
	t.Parallel()
	b := startBackend(t, "alpha", proxytest.StreamableHTTP)
	p := startProxy(t, b.URL)
	if err := p.SetFaults([]byte(fault503), 0); err != nil {
		t.Fatal(err)
	}
	toolsListStatus(t, p.URL())
	_, body := admin(t, "GET", p.AdminURL()+"/requests", "")
	reqs, _ := body["requests"].([]any)
	if len(reqs) != 1 {
		t.Fatalf("requests: %v", body)
	}
	r := reqs[0].(map[string]any)
	if r["method"] != "tools/list" || r["status"] != float64(503) || r["fault"] == "" || r["httpMethod"] != "POST" {
		t.Fatalf("record %v", r)
	}
}
