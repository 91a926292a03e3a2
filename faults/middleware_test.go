package faults_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
)

// upstream answers every POST with a fixed JSON-RPC result.
const answer = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"the whole answer"}]}}`

func startProxy(t *testing.T, e *faults.Engine) *httptest.Server {
	t.Helper()
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	})
	srv := httptest.NewServer(faults.Middleware(e, up))
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, url, tool string) (int, string, error, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `"}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err, time.Since(start)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err, time.Since(start)
}

func TestMiddlewareTruncateSendsFirstBytesThenCloses(t *testing.T) {
	e := faults.NewEngine(1, faults.Fault{Kind: faults.KindTruncate, Match: faults.Match{Tool: "echo"}, Params: &faults.Truncate{Size: 20}})
	srv := startProxy(t, e)
	status, body, err, took := post(t, srv.URL, "echo")
	if err == nil || status != 200 || body != answer[:20] {
		t.Fatalf("truncated answer: status %d, body %q, err %v; want 200, %q and a read error", status, body, err, answer[:20])
	}
	if took > 2*time.Second {
		t.Errorf("truncated answer took %s; it must end promptly", took)
	}
	// Another tool does not match: the whole answer passes.
	if status, body, err, _ := post(t, srv.URL, "other"); err != nil || status != 200 || body != answer {
		t.Fatalf("unmatched call: status %d, body %q, err %v", status, body, err)
	}
}

func TestMiddlewareAppliesKindsInFrontOfAnyHandler(t *testing.T) {
	e := faults.NewEngine(1,
		faults.Fault{Kind: faults.KindLatency, Count: 1, Params: &faults.Latency{Delay: faults.Duration(150 * time.Millisecond)}},
		faults.Fault{Kind: faults.KindHTTPStatus, After: 1, Count: 1, Params: &faults.HTTPStatus{Status: 503, Body: &faults.Body{Text: "busy"}}},
		faults.Fault{Kind: faults.KindJSONRPCError, Match: faults.Match{Tool: "bad*"}, Params: &faults.JSONRPCError{Code: -32000, Message: "nope"}},
	)
	srv := startProxy(t, e)
	if status, body, err, took := post(t, srv.URL, "echo"); err != nil || status != 200 || body != answer || took < 150*time.Millisecond {
		t.Fatalf("first call: status %d, body %q, err %v, took %s; want the answer after >= 150ms", status, body, err, took)
	}
	if status, body, err, _ := post(t, srv.URL, "echo"); err != nil || status != 503 || body != "busy" {
		t.Fatalf("second call: status %d, body %q, err %v; want 503 busy", status, body, err)
	}
	if status, body, err, _ := post(t, srv.URL, "badtool"); err != nil || status != 200 || !strings.Contains(body, `"message":"nope"`) {
		t.Fatalf("bad tool: status %d, body %q, err %v; want a JSON-RPC error", status, body, err)
	}
	if status, body, err, _ := post(t, srv.URL, "echo"); err != nil || status != 200 || body != answer {
		t.Fatalf("after the counts: status %d, body %q, err %v", status, body, err)
	}
}
