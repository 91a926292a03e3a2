package targets

import (
	"reflect"
	"testing"
)

// TestStateAPIDefaultIsParseBackendStates: the zero StateAPI reads exactly
// what ParseBackendStates read before profiles (exact keys, "backends" or
// the top level, map or list).
func TestStateAPIDefaultIsParseBackendStates(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		`{"backends":{"beta":{"status":"unhealthy","circuitState":"open","lastError":"boom"},"alpha":{"status":"healthy","circuitState":"closed"}},"summary":{}}`,
		`{"id":"s","backends":{"beta":{"state":"error","lastError":"x"}}}`,
		`[{"name":"beta","health":"degraded","breaker":{"state":"half-open"}}]`,
		`{"beta":{"Status":"healthy","CircuitState":"open"}}`,
	} {
		got, err := StateAPI{}.Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		old, _ := ParseBackendStates([]byte(doc))
		if !reflect.DeepEqual(got, old) {
			t.Errorf("%s: %v vs %v", doc, got, old)
		}
	}
	got, _ := StateAPI{}.Parse([]byte(`{"beta":{"Status":"healthy","CircuitState":"open"}}`))
	if got["beta"].State != "" || got["beta"].Breaker != "" {
		t.Errorf("default matching must stay exact: %+v", got["beta"])
	}
	got, _ = StateAPI{}.Parse([]byte(`[{"name":"beta","health":"degraded","breaker":{"state":"half-open"}}]`))
	if got["beta"].State != "degraded" || got["beta"].Breaker != "half-open" {
		t.Errorf("list: %+v", got)
	}
}

// TestStateAPIMapping reads toolhive-like capitalised fields, a list under
// another pointer, and maps values.
func TestStateAPIMapping(t *testing.T) {
	t.Parallel()
	ptr := "/backends"
	th := StateAPI{Backends: &ptr, Status: "status", Circuit: "circuitstate", LastError: "LastErrorCategory"}
	got, err := th.Parse([]byte(`{"monitoring_enabled":true,"summary":{"x":1},"backends":{"beta":{"Status":"healthy","ConsecutiveFailures":0,"CircuitState":"closed","LastErrorCategory":"timeout"}}}`))
	if err != nil || got["beta"].State != "healthy" || got["beta"].Breaker != "closed" || got["beta"].LastError != "timeout" || len(got) != 1 {
		t.Fatalf("toolhive shape: %+v %v", got, err)
	}

	list := "/data/servers"
	mp := StateAPI{Path: "/v1/servers", Backends: &list, Name: "ID", Status: "health", Circuit: "breaker",
		StatusValues: map[string]string{"UP": "healthy", "down": "unhealthy"}, CircuitValues: map[string]string{"tripped": "open"}}
	got, err = mp.Parse([]byte(`{"data":{"servers":[{"id":"alpha","Health":"up","Breaker":"CLOSED"},{"id":"beta","HEALTH":"DOWN","breaker":"Tripped"},{"Health":"up"}]}}`))
	if err != nil || got["alpha"].State != "healthy" || got["alpha"].Breaker != "CLOSED" || got["beta"].State != "unhealthy" || got["beta"].Breaker != "open" || len(got) != 2 {
		t.Fatalf("list shape: %+v %v", got, err)
	}
	if u, _ := mp.URL("http://h:1", HealthPath, ""); u != "http://h:1/v1/servers" {
		t.Errorf("URL %s", u)
	}
	if u, _ := (StateAPI{}).URL("http://h:1", DefaultSessionPath, "a/b"); u != "http://h:1/api/sessions/a%2Fb" {
		t.Errorf("default session URL %s", u)
	}

	bad := "/nope"
	if _, err := (StateAPI{Backends: &bad}).Parse([]byte(`{"backends":{}}`)); err == nil {
		t.Error("a pointer to nothing must fail")
	}
	scalar := "/n"
	if _, err := (StateAPI{Backends: &scalar}).Parse([]byte(`{"n":3}`)); err == nil {
		t.Error("a pointer to a scalar must fail")
	}
}

func TestJSONPointer(t *testing.T) {
	t.Parallel()
	doc := map[string]any{"a/b": map[string]any{"m~n": []any{"x", "y"}}, "": 1}
	for p, want := range map[string]any{"/a~1b/m~0n/1": "y", "/": 1} {
		got, err := ResolveJSONPointer(doc, p)
		if err != nil || got != want {
			t.Errorf("%s: %v %v", p, got, err)
		}
	}
	for _, p := range []string{"x", "/~", "/a~1b/m~0n/01", "/a~1b/m~0n/2", "/a~1b/m~0n/-1"} {
		if _, err := ResolveJSONPointer(doc, p); err == nil {
			t.Errorf("%s: want an error", p)
		}
	}
}

// TestStateAPIKeepalive: the reference's keepalive object is read by
// default; a profile's mapping reads another shape; a mapped API without
// it, or without a mapping, reports none.
func TestStateAPIKeepalive(t *testing.T) {
	t.Parallel()
	ref := []byte(`{"backends":{"beta":{"state":"healthy","keepalive":{"enabled":true,"consecutiveFailures":2,"sessions":1}},"alpha":{"state":"healthy"}}}`)
	st, err := StateAPI{}.Parse(ref)
	if err != nil {
		t.Fatal(err)
	}
	if ka := st["beta"].Keepalive; ka == nil || !ka.Enabled || ka.Failures != 2 || ka.Sessions != 1 {
		t.Fatalf("reference keepalive: %+v", ka)
	}
	if st["alpha"].Keepalive != nil {
		t.Fatalf("alpha reports no keepalive: %+v", st["alpha"].Keepalive)
	}
	root := "/servers"
	mapped := StateAPI{Backends: &root, Name: "name", Status: "health",
		Keepalive: &KeepaliveFields{Enabled: "/probe/on", Failures: "/probe/misses"}}
	st, err = mapped.Parse([]byte(`{"servers":[{"name":"beta","health":"up","probe":{"on":false,"misses":3}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if ka := st["beta"].Keepalive; ka == nil || ka.Enabled || ka.Failures != 3 || ka.Sessions != -1 {
		t.Fatalf("mapped keepalive: %+v", ka)
	}
	mapped.Keepalive = nil
	if _, ok := mapped.KeepaliveFieldsOf(); ok {
		t.Fatal("a profile's health API without a keepalive mapping reports keepalive")
	}
	st, _ = mapped.Parse([]byte(`{"servers":[{"name":"beta","health":"up","keepalive":{"enabled":true}}]}`))
	if st["beta"].Keepalive != nil {
		t.Fatalf("no mapping, no keepalive state (not the reference's shape): %+v", st["beta"].Keepalive)
	}
}
