package proxy_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/proxy/proxytest"
)

// BenchmarkOverhead measures what the proxy adds, with no fault, on
// loopback: tools/call echo on one session, alternately direct and through
// the proxy, over keep-alive connections. It reports the p50 of each and
// the p50 added (goal: <= 0.2 ms).
func BenchmarkOverhead(b *testing.B) {
	be := startBackend(b, "alpha", proxytest.StreamableHTTP)
	p := startProxy(b, be.URL)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	session := func(url string) string {
		init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`
		resp := do(b, hc, url, "", init)
		return resp
	}
	sd, sp := session(be.URL), session(p.URL())
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`
	var direct, proxied []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		do(b, hc, be.URL, sd, call)
		direct = append(direct, time.Since(t0))
		t0 = time.Now()
		do(b, hc, p.URL(), sp, call)
		proxied = append(proxied, time.Since(t0))
	}
	b.StopTimer()
	pd, pp := p50(direct), p50(proxied)
	b.ReportMetric(pd, "direct-p50-ms")
	b.ReportMetric(pp, "proxied-p50-ms")
	b.ReportMetric(pp-pd, "added-p50-ms")
}

func p50(d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2]) / 1e6
}

// do posts body and returns the answer's Mcp-Session-Id, failing on any
// status but 200.
func do(b *testing.B, hc *http.Client, url, sid, body string) string {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("%s: status %d", url, resp.StatusCode)
	}
	return resp.Header.Get("Mcp-Session-Id")
}
