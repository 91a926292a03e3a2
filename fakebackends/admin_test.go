package fakebackends

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
)

func adminDo(t *testing.T, b *Backend, method, path, body, token string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, b.AdminURL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func TestControlAPIChangesFaultsLive(t *testing.T) {
	t.Parallel()
	b := startBackend(t, testScript(t, TransportStreamableHTTP, ProtocolLegacy))
	c := connect(t, b, revLegacy)

	code, body := adminDo(t, b, http.MethodPut, "/faults", "- kind: http_status\n  status: 503\n  match: {tool: echo}\n", "")
	if code != 200 {
		t.Fatalf("PUT /faults = %d %s", code, body)
	}
	if _, err, _ := call(c, "echo", nil, 5*time.Second); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("after PUT: %v; want 503", err)
	}
	code, body = adminDo(t, b, http.MethodPost, "/faults", `{"faults":[{"kind":"tool_error","text":"t","match":{"tool":"greet"}}]}`, "")
	if code != 200 {
		t.Fatalf("POST /faults = %d %s", code, body)
	}
	code, body = adminDo(t, b, http.MethodGet, "/faults", "", "")
	var got struct{ Faults []Fault }
	if code != 200 || json.Unmarshal([]byte(body), &got) != nil || len(got.Faults) != 2 || got.Faults[0].Params.(*faults.HTTPStatus).Status != 503 || got.Faults[1].Params.(*faults.ToolError).Text != "t" {
		t.Fatalf("GET /faults = %d %s", code, body)
	}
	// A bad fault is refused with a message naming the field; nothing changes.
	code, body = adminDo(t, b, http.MethodPut, "/faults", "- kind: stall\n  stage: sideways\n", "")
	if code != 400 || !strings.Contains(body, "stage") {
		t.Fatalf("bad PUT = %d %s; want 400 naming the field", code, body)
	}
	if len(b.Faults()) != 2 {
		t.Fatalf("a refused PUT changed the faults: %+v", b.Faults())
	}
	if code, _ = adminDo(t, b, http.MethodDelete, "/faults", "", ""); code != 200 || len(b.Faults()) != 0 {
		t.Fatalf("DELETE /faults = %d, faults %v", code, b.Faults())
	}
	if _, err, _ := call(c, "echo", nil, 5*time.Second); err != nil {
		t.Fatalf("after DELETE: %v", err)
	}
	code, body = adminDo(t, b, http.MethodGet, "/requests", "", "")
	var log struct{ Requests []RequestRecord }
	if code != 200 || json.Unmarshal([]byte(body), &log) != nil || len(log.Requests) < 3 {
		t.Fatalf("GET /requests = %d %s", code, body)
	}
	if code, body = adminDo(t, b, http.MethodPost, "/expire-sessions", "", ""); code != 200 || !strings.Contains(body, `"expired": 1`) {
		t.Fatalf("POST /expire-sessions = %d %s", code, body)
	}
	if code, body = adminDo(t, b, http.MethodPost, "/restart", "", ""); code != 200 {
		t.Fatalf("POST /restart = %d %s", code, body)
	}
}

func TestControlAPIToken(t *testing.T) {
	t.Parallel()
	b := startBackend(t, testScript(t, TransportStreamableHTTP, ProtocolLegacy), WithAdminToken("s3cret"))
	if code, _ := adminDo(t, b, http.MethodGet, "/faults", "", ""); code != 401 {
		t.Fatalf("no token: %d, want 401", code)
	}
	if code, _ := adminDo(t, b, http.MethodGet, "/faults", "", "wrong"); code != 401 {
		t.Fatalf("wrong token: %d, want 401", code)
	}
	if code, _ := adminDo(t, b, http.MethodGet, "/faults", "", "s3cret"); code != 200 {
		t.Fatalf("right token: %d, want 200", code)
	}
}

func TestControlAPIOffLoopbackNeedsToken(t *testing.T) {
	t.Parallel()
	s := testScript(t, TransportStreamableHTTP, ProtocolLegacy)
	s.Admin = "0.0.0.0:0"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := Start(ctx, s)
	if err == nil {
		b.Close()
		t.Fatal("started a control API on 0.0.0.0 without a token")
	}
	if !strings.Contains(err.Error(), "admin token") {
		t.Fatalf("error %q does not say a token is needed", err)
	}
}

func TestExitFaultNeedsProcessMode(t *testing.T) {
	t.Parallel()
	b := startBackend(t, testScript(t, TransportStreamableHTTP, ProtocolLegacy))
	if err := b.SetFaults(Fault{Kind: faults.KindCrash, Params: &faults.Crash{Exit: true}}); err == nil || !strings.Contains(err.Error(), "process mode") {
		t.Fatalf("exit fault in library mode: %v", err)
	}
	exited := make(chan int, 1)
	b2 := startBackend(t, testScript(t, TransportStreamableHTTP, ProtocolLegacy), WithExit(func(code int) { exited <- code }))
	if err := b2.SetFaults(Fault{Kind: faults.KindCrash, Match: Match{Tool: "echo"}, Params: &faults.Crash{Exit: true, ExitCode: 7}}); err != nil {
		t.Fatal(err)
	}
	c := connect(t, b2, revLegacy)
	_, _, _ = call(c, "echo", nil, 2*time.Second)
	select {
	case code := <-exited:
		if code != 7 {
			t.Fatalf("exit code %d, want 7", code)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("exit fault did not call exit")
	}
}
