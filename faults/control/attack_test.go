package control_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/proxy"
	"github.com/vmcp-chaos/vmcp-chaos/proxy/proxytest"
)

// manyFaults is a JSON list of n tool_error faults.
func manyFaults(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = `{"kind":"tool_error","text":"x"}`
	}
	return "[" + strings.Join(items, ",") + "]"
}

// TestControlAPIAttacks: the same bad requests to a fake backend's and a
// proxy's control API are refused alike, with the status and the field
// named, and leave no fault set. One row per attack (the ones answered
// 200 before included).
func TestControlAPIAttacks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fb, err := fakebackends.Start(ctx, &fakebackends.Script{Name: "beta", Tools: []fakebackends.ToolSpec{{Name: "echo"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fb.Close() })
	up, err := proxytest.Start("alpha", proxytest.StreamableHTTP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = up.Close() })
	p, err := proxy.New(proxy.Options{Upstream: up.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = p.Close(cctx)
	})

	latency := func(d string) string { return fmt.Sprintf(`{"kind":"latency","delay":%q}`, d) }
	cases := []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"body over 1 MiB", "PUT", "/faults", `[{"kind":"tool_error","text":"` + strings.Repeat("x", 1<<20) + `"}]`, 413, "body larger than 1048576 bytes"},
		{"1,001 faults", "PUT", "/faults", manyFaults(1001), 400, "faults: 1001 faults: at most 1000"},
		{"20,000 faults in 600 KB", "POST", "/faults", "[" + strings.Repeat(latency("1s")+",", 19999) + latency("1s") + "]", 400, "faults: 20000 faults: at most 1000"},
		{"latencies adding up to hours", "PUT", "/faults", "[" + latency("6m") + "," + latency("5m") + "]", 400, "faults[1]: the latencies add up to 11m0s"},
		{"ttl -1s", "PUT", "/faults?ttl=-1s", manyFaults(1), 400, `ttl \"-1s\"`},
		{"ttl soon", "PUT", "/faults?ttl=soon", manyFaults(1), 400, `ttl \"soon\"`},
		{"ttl 1e9h", "POST", "/faults?ttl=1e9h", manyFaults(1), 400, `ttl \"1e9h\"`},
		{"renew ttl 0s", "POST", "/lease?ttl=0s", "", 400, `ttl \"0s\"`},
		{"unknown kind", "PUT", "/faults", `[{"kind":"teleport"}]`, 400, "teleport"},
		{"not a list", "PUT", "/faults", `"hello"`, 400, "want a list of faults"},
		{"trailing garbage", "PUT", "/faults", manyFaults(1) + " ]]", 400, "PUT /faults"},
	}
	for _, api := range []struct{ name, base string }{{"fake backend", fb.AdminURL()}, {"proxy", p.AdminURL()}} {
		for _, tc := range cases {
			t.Run(api.name+"/"+tc.name, func(t *testing.T) {
				req, _ := http.NewRequest(tc.method, api.base+tc.path, strings.NewReader(tc.body))
				resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.status || !strings.Contains(string(data), tc.want) {
					t.Fatalf("%s %s: %d %s\nwant %d saying %q", tc.method, tc.path, resp.StatusCode, data, tc.status, tc.want)
				}
			})
		}
	}
	if n := len(fb.Faults()); n != 0 {
		t.Fatalf("fake backend: %d faults set by refused requests", n)
	}
	if n := p.Engine().Len(); n != 0 {
		t.Fatalf("proxy: %d faults set by refused requests", n)
	}
}
