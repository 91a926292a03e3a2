package fakebackends

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/faults/control"
)

const lease503 = `[{"kind": "http_status", "status": 503, "match": {"tool": "echo"}}]`

type leaseAnswer struct {
	Faults []json.RawMessage   `json:"faults"`
	Lease  control.LeaseStatus `json:"lease"`
}

func decodeLease(t *testing.T, body string) leaseAnswer {
	t.Helper()
	var a leaseAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return a
}

// TestControlAPIBadTTLRefused: a ttl that is not a duration in (0, max]
// answers 400 naming it, and sets nothing (the attacks -1s, soon, 1e9h
// were answered 200 before).
func TestControlAPIBadTTLRefused(t *testing.T) {
	t.Parallel()
	b := startBackend(t, testScript(t, TransportStreamableHTTP, ProtocolLegacy))
	for _, ttl := range []string{"-1s", "soon", "1e9h", "0s", "", "11m"} {
		for _, route := range []string{"PUT /faults", "POST /faults", "POST /lease"} {
			method, path, _ := strings.Cut(route, " ")
			code, body := adminDo(t, b, method, path+"?ttl="+ttl, lease503, "")
			if code != http.StatusBadRequest || !strings.Contains(body, `ttl \"`+ttl+`\"`) {
				t.Errorf("%s?ttl=%s: %d %s; want 400 naming the ttl", route, ttl, code, body)
			}
		}
	}
	if len(b.Faults()) != 0 {
		t.Fatalf("a refused ttl set faults: %+v", b.Faults())
	}
}

// TestControlAPILease: faults set through the control API hold a lease
// (default 30 s, or ?ttl=), GET /lease shows it, POST /lease renews it,
// and when nobody renews it the faults are cleared and traffic passes.
func TestControlAPILease(t *testing.T) {
	t.Parallel()
	b := startBackend(t, testScript(t, TransportStreamableHTTP, ProtocolLegacy))
	c := connect(t, b, revLegacy)

	code, body := adminDo(t, b, http.MethodPut, "/faults", lease503, "")
	if a := decodeLease(t, body); code != 200 || !a.Lease.Active || a.Lease.TTL != "30s" {
		t.Fatalf("PUT without ttl: %d %s; want the default 30s lease", code, body)
	}
	if code, body = adminDo(t, b, http.MethodPost, "/lease?ttl=1m", "", ""); code != 200 || decodeLease(t, `{"lease":`+body+`}`).Lease.TTL != "1m0s" {
		t.Fatalf("renew for 1m: %d %s", code, body)
	}
	// A TTL short enough to run out during the test, long enough that the
	// fault is seen first even on a loaded machine.
	if code, body = adminDo(t, b, http.MethodPut, "/faults?ttl=2s", lease503, ""); code != 200 {
		t.Fatalf("PUT ?ttl=2s: %d %s", code, body)
	}
	if _, err, _ := call(c, "echo", nil, 5*time.Second); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("with the leased fault: %v; want 503", err)
	}
	gomega.NewWithT(t).Eventually(func() int { return len(b.Faults()) }).WithTimeout(20*time.Second).WithPolling(50*time.Millisecond).
		Should(gomega.BeZero(), "faults still set after the lease ran out")
	if _, err, _ := call(c, "echo", nil, 5*time.Second); err != nil {
		t.Fatalf("after the lease ran out: %v", err)
	}
	code, body = adminDo(t, b, http.MethodGet, "/lease", "", "")
	var st control.LeaseStatus
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil || st.Active || st.Expired != 1 {
		t.Fatalf("GET /lease after expiry: %d %s; want inactive, expired 1", code, body)
	}
	if code, _ = adminDo(t, b, http.MethodPost, "/lease", "", ""); code != http.StatusConflict {
		t.Fatalf("renew with no faults: %d, want 409", code)
	}
	// DELETE ends a lease without an expiry.
	adminDo(t, b, http.MethodPut, "/faults?ttl=1m", lease503, "")
	if code, body = adminDo(t, b, http.MethodDelete, "/faults", "", ""); code != 200 || decodeLease(t, body).Lease.Active {
		t.Fatalf("DELETE: %d %s", code, body)
	}
}

// TestControlAPILeaseOptions: WithLease sets the default and the maximum.
func TestControlAPILeaseOptions(t *testing.T) {
	t.Parallel()
	b := startBackend(t, testScript(t, TransportStreamableHTTP, ProtocolLegacy), WithLease(5*time.Second, time.Minute))
	if code, body := adminDo(t, b, http.MethodPut, "/faults", lease503, ""); code != 200 || decodeLease(t, body).Lease.TTL != "5s" {
		t.Fatalf("default ttl: %d %s", code, body)
	}
	if code, body := adminDo(t, b, http.MethodPut, "/faults?ttl=2m", lease503, ""); code != 400 || !strings.Contains(body, "1m0s") {
		t.Fatalf("ttl over the maximum: %d %s", code, body)
	}
}
