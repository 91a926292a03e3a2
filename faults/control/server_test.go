package control

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestReadBodyRefusesOversizedBodyInsteadOfTruncating(t *testing.T) {
	r := httptest.NewRequest(http.MethodPut, "/faults", strings.NewReader(strings.Repeat("x", MaxBody+1)))
	if _, err := ReadBody(r); err == nil || !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("ReadBody of %d bytes: err = %v, want \"body larger than\"", MaxBody+1, err)
	}
	r = httptest.NewRequest(http.MethodPut, "/faults", strings.NewReader(strings.Repeat("x", MaxBody)))
	if data, err := ReadBody(r); err != nil || len(data) != MaxBody {
		t.Fatalf("ReadBody of %d bytes: %d bytes, err %v", MaxBody, len(data), err)
	}
}

func TestRequireToken(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := RequireToken("s3cret", "test-realm", ok)
	for _, tc := range []struct {
		auth string
		want int
	}{{"", http.StatusUnauthorized}, {"Bearer nope", http.StatusUnauthorized}, {"Bearer s3cret", http.StatusTeapot}} {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/faults", nil)
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		h.ServeHTTP(rec, r)
		if rec.Code != tc.want {
			t.Errorf("Authorization %q: status %d, want %d", tc.auth, rec.Code, tc.want)
		}
		if tc.want == http.StatusUnauthorized && !strings.Contains(rec.Header().Get("WWW-Authenticate"), `realm="test-realm"`) {
			t.Errorf("Authorization %q: WWW-Authenticate %q lacks the realm", tc.auth, rec.Header().Get("WWW-Authenticate"))
		}
	}
	rec := httptest.NewRecorder()
	RequireToken("", "r", ok).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusTeapot {
		t.Errorf("no token configured: status %d, want the handler's %d", rec.Code, http.StatusTeapot)
	}
}

func TestStatusWriterRecordsFirstStatus(t *testing.T) {
	rec := httptest.NewRecorder()
	sw := &StatusWriter{ResponseWriter: rec}
	_, _ = sw.Write([]byte("x"))
	sw.WriteHeader(http.StatusTeapot)
	if sw.Status != http.StatusOK {
		t.Fatalf("Status = %d after a write, want 200", sw.Status)
	}
}
