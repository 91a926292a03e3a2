package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestDiscoverFirst (fixture q): with --per-call --discover-first each
// call opens beta's session with server/discover, never initialize;
// without it, with initialize.
func TestDiscoverFirst(t *testing.T) {
	for _, discover := range []bool{false, true} {
		alpha, beta := startBackend(t, "alpha", "streamable-http"), startBackend(t, "beta", "streamable-http")
		args := []string{"--look", "a", "--prefix-format", "{backend}__", "--per-call"}
		if discover {
			args = append(args, "--discover-first")
		}
		c, _ := connect(t, startFixture(t, alpha, beta, args...))
		n := len(beta.Requests())
		if res, err := callTool(t, c, "beta__echo"); err != nil || res.IsError {
			t.Fatalf("discover-first=%v: %+v, %v; want a success", discover, res, err)
		}
		var methods []string
		for _, r := range beta.Requests()[n:] {
			if r.Method != "" {
				methods = append(methods, r.Method)
			}
		}
		want := "initialize"
		if discover {
			want = "server/discover"
		}
		if len(methods) == 0 || methods[0] != want || discover && strings.Contains(strings.Join(methods, " "), "initialize") {
			t.Errorf("discover-first=%v: the call's backend session sent %q; want it opened by %s alone", discover, methods, want)
		}
	}
	if _, err := newFixture([]string{"--discover-first"}); err == nil || !strings.Contains(err.Error(), "--per-call") {
		t.Errorf("--discover-first without --per-call: %v; want an error naming --per-call", err)
	}
}

// TestHealthAlwaysHealthy (fixture r): the health API reports beta
// healthy while beta's health monitor says it is not.
func TestHealthAlwaysHealthy(t *testing.T) {
	alpha, beta := startBackend(t, "alpha", "streamable-http"), startBackend(t, "beta", "streamable-http")
	url := startFixture(t, alpha, beta, "--look", "a", "--prefix-format", "{backend}__", "--health-always-healthy")
	_ = beta.Close() // beta is gone: a call fails, and the gateway knows
	c, _ := connect(t, url)
	for range 3 {
		_, _ = callTool(t, c, "beta__echo")
	}
	resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/admin/backends/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Backends map[string]struct{ Status, CircuitState string } `json:"backends"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if b := doc.Backends["beta"]; b.Status != "healthy" || b.CircuitState != "closed" {
		t.Errorf("beta after failed calls: %+v; want the lie: healthy, closed", b)
	}
}

// TestRefuseRevision (fixture s): a request on a refused revision is
// answered -32022 while server/discover still lists it; a client of
// another revision is served.
func TestRefuseRevision(t *testing.T) {
	alpha, beta := startBackend(t, "alpha", "streamable-http"), startBackend(t, "beta", "streamable-http")
	url := startFixture(t, alpha, beta, "--look", "a", "--prefix-format", "{backend}__", "--refuse-revision", mcp.LATEST_PROTOCOL_VERSION)
	c, _ := connect(t, url) // 2025-11-25
	if res, err := callTool(t, c, "beta__echo"); err != nil || res.IsError {
		t.Errorf("a 2025-11-25 client: %+v, %v; want a success", res, err)
	}
	post := func(body string, header map[string]string) rpcAnswer {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a rpcAnswer
		_ = json.NewDecoder(resp.Body).Decode(&a)
		return a
	}
	modern := map[string]string{"Mcp-Protocol-Version": mcp.LATEST_PROTOCOL_VERSION, "Mcp-Method": "server/discover"}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + mcp.LATEST_PROTOCOL_VERSION + `","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	if a := post(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta+`}}`, modern); a.Error != nil || !strings.Contains(string(a.Result), mcp.LATEST_PROTOCOL_VERSION) {
		t.Errorf("server/discover: %+v; want a result listing %s", a, mcp.LATEST_PROTOCOL_VERSION)
	}
	modern["Mcp-Method"], modern["Mcp-Name"] = "tools/call", "beta__echo"
	if a := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"beta__echo","arguments":{"msg":"x"},`+meta+`}}`, modern); a.Error == nil || a.Error.Code != unsupportedVersion {
		t.Errorf("tools/call on %s: %+v; want error %d", mcp.LATEST_PROTOCOL_VERSION, a, unsupportedVersion)
	}
	if _, err := newFixture([]string{"--refuse-revision", "latest"}); err == nil || !strings.Contains(err.Error(), "protocol revision") {
		t.Errorf("--refuse-revision latest: %v; want an error asking for a revision", err)
	}
}
