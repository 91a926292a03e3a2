package targets_test

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"
)

func TestParseBackendStates(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"map under backends":  `{"backends": {"beta": {"status": "unhealthy", "circuit": {"state": "open"}, "lastError": "x"}}}`,
		"list under backends": `{"backends": [{"name": "beta", "health": "unhealthy", "breakerState": "open", "lastError": "x"}]}`,
		"top-level list":      `[{"name": "beta", "state": "unhealthy", "circuit_state": "open", "lastError": "x"}]`,
		"top-level map":       `{"beta": {"status": "unhealthy", "breaker": "open", "lastError": "x"}}`,
	} {
		s, err := targets.ParseBackendStates([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b := s["beta"]; b.State != "unhealthy" || b.Breaker != "open" || b.LastError != "x" {
			t.Errorf("%s: %+v", name, b)
		}
	}
	if _, err := targets.ParseBackendStates([]byte(`"nope"`)); err == nil {
		t.Error("string accepted")
	}
}

// fakeHealth serves GET /api/backends/health from a mutable document.
type fakeHealth struct {
	mu  sync.Mutex
	doc string
}

func (f *fakeHealth) set(doc string) {
	f.mu.Lock()
	f.doc = doc
	f.mu.Unlock()
}

func (f *fakeHealth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != targets.HealthPath {
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(f.doc))
}

func TestHealthPollerRecordsTransitions(t *testing.T) {
	t.Parallel()
	fh := &fakeHealth{doc: `{"backends": {"beta": {"status": "healthy", "breaker": "closed"}}}`}
	srv := httptest.NewServer(fh)
	defer srv.Close()
	rec := history.NewRecorder("breaker")
	p, err := targets.NewHealthPoller(nil, srv.URL, rec, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	defer p.Stop()
	ctx := ctxT(t, 5*time.Second)
	if err := p.WaitForState(ctx, "beta", "breaker", "closed"); err != nil {
		t.Fatal(err)
	}
	fh.set(`{"backends": {"beta": {"status": "unhealthy", "breaker": "open"}}}`)
	if err := p.WaitForState(ctx, "beta", "breaker", "open"); err != nil {
		t.Fatal(err)
	}
	fh.set(`{"backends": {"beta": {"status": "healthy", "breaker": "half-open"}}}`)
	if err := p.WaitForState(ctx, "beta", "health", "healthy"); err != nil {
		t.Fatal(err)
	}
	p.Stop()
	var got []string
	for _, tr := range rec.Transitions() {
		got = append(got, tr.Aspect+":"+tr.From+">"+tr.To)
	}
	want := []string{"health:>healthy", "breaker:>closed", "health:healthy>unhealthy", "breaker:closed>open", "health:unhealthy>healthy", "breaker:open>half-open"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("transitions %v, want %v", got, want)
	}
	short, cancel := ctxWithTimeout(50 * time.Millisecond)
	defer cancel()
	if err := p.WaitForState(short, "beta", "breaker", "closed"); err == nil || !strings.Contains(err.Error(), "half-open") {
		t.Fatalf("WaitForState timeout: %v", err)
	}
}

// TestHealthPollerConcurrentPollsKeepOrder: a poll that fetched the
// states first records them first. Two polls at once (the background
// poller and a check's own Poll), the first one slow: without
// serialization the slow one recorded its stale "closed" after the fast
// one's "open", a transition back that never happened (and a check of
// the path could miss a state it saw).
func TestHealthPollerConcurrentPollsKeepOrder(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	state, first := "closed", true
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		doc := `{"backends": {"beta": {"status": "healthy", "breaker": "` + state + `"}}}`
		slow := first
		first = false
		mu.Unlock()
		if slow {
			<-release // the first poll's answer, fetched while closed, is late
		}
		_, _ = w.Write([]byte(doc))
	}))
	defer srv.Close()
	rec := history.NewRecorder("order")
	p, err := targets.NewHealthPoller(nil, srv.URL, rec, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 10*time.Second)
	slowDone := make(chan struct{})
	go func() { defer close(slowDone); _, _ = p.Poll(ctx) }()
	testwait.For(t, 10*time.Second, "the slow poll to fetch", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !first
	})
	mu.Lock()
	state = "open"
	mu.Unlock()
	fastDone := make(chan struct{})
	go func() { defer close(fastDone); _, _ = p.Poll(ctx) }()
	time.Sleep(50 * time.Millisecond) // let the second poll run as far as it can
	close(release)
	<-slowDone
	<-fastDone
	var got []string
	for _, tr := range rec.Transitions() {
		if tr.Aspect == "breaker" {
			got = append(got, tr.From+"->"+tr.To)
		}
	}
	if want := []string{"->closed", "closed->open"}; !slices.Equal(got, want) {
		t.Fatalf("breaker transitions %v, want %v", got, want)
	}
}
