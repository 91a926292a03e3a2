package control

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestClientSendsTokenAndBodyAndReportsAPIError(t *testing.T) {
	srv := httptest.NewServer(RequireToken("tok", "t", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := ReadBody(r)
		if err != nil || r.Header.Get("Content-Type") != "application/json" {
			WriteError(w, http.StatusBadRequest, err)
			return
		}
		WriteError(w, http.StatusConflict, &echoErr{string(body)})
	})))
	defer srv.Close()
	c := NewClient(srv.URL+"/", "tok", 5*time.Second)
	if c.Base() != srv.URL {
		t.Fatalf("Base() = %q, want the URL without its trailing slash %q", c.Base(), srv.URL)
	}
	status, data, err := c.Do(context.Background(), http.MethodPost, "/faults", []byte(`[1]`))
	if err != nil || status != http.StatusConflict {
		t.Fatalf("Do: status %d, err %v; want 409", status, err)
	}
	got := APIError("POST /faults", status, data).Error()
	if got != "POST /faults: HTTP 409: got [1]" {
		t.Fatalf("APIError = %q", got)
	}
	if got := APIError("GET /x", 502, []byte(" bad gateway\n")).Error(); got != "GET /x: HTTP 502: bad gateway" {
		t.Fatalf("APIError of a non-JSON body = %q", got)
	}
	status, _, err = NewClient(srv.URL, "wrong", 5*time.Second).Do(context.Background(), http.MethodGet, "/faults", nil)
	if err != nil || status != http.StatusUnauthorized {
		t.Fatalf("wrong token: status %d, err %v; want 401", status, err)
	}
}

func TestClientRequestHasDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	start := time.Now()
	_, _, err := NewClient(srv.URL, "", 200*time.Millisecond).Do(context.Background(), http.MethodGet, "/faults", nil)
	if err == nil || !strings.Contains(err.Error(), "deadline") && !strings.Contains(err.Error(), "Timeout") {
		t.Fatalf("Do against a server that never answers: err %v after %s, want a deadline error", err, time.Since(start))
	}
}

type echoErr struct{ s string }

func (e *echoErr) Error() string { return "got " + e.s }
