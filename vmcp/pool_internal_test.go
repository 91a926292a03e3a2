package vmcp

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
)

// TestPoolPickDuringReinitialization: requests pick pool members while a
// member re-initializes (its connection is replaced under the member's
// lock). Run with -race: the pool must read a member's connection under the
// member's lock too.
func TestPoolPickDuringReinitialization(t *testing.T) {
	t.Parallel()
	s, err := fakebackends.ParseScript([]byte("name: beta\nprotocol: legacy\ntools:\n  - {name: echo}\n"), "beta.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fb, err := fakebackends.Start(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	g := startPoolGateway(t, "name: t\nbackends:\n  - {name: beta, url: \""+fb.URL()+"\"}\ntimeouts: {initialize: 2s, call: 2s, close: 500ms}\n")
	if _, err := g.pool.ensure(ctx, false); err != nil {
		t.Fatal(err)
	}
	slot, be := g.pool.pick(ctx, "beta", "tools/call")
	if be != nil {
		t.Fatal(be)
	}
	m := slot.m

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, be := g.pool.pick(ctx, "beta", "tools/call"); be != nil {
				t.Errorf("pick: %v", be)
				return
			}
			g.pool.ensure(ctx, true)
		}
	}()
	for i := range 5 {
		m.mu.Lock()
		c := m.conn
		m.mu.Unlock()
		c2, be := m.reconnect(ctx, c, "tools/call", 2*time.Second)
		if be != nil {
			t.Fatalf("re-initialization %d: %v", i, be)
		}
		if c2 == c {
			t.Fatalf("re-initialization %d kept the old connection", i)
		}
	}
	close(stop)
	wg.Wait()
	if st := m.status(); st.Reinitializations != 5 {
		t.Errorf("re-initializations = %d, want 5", st.Reinitializations)
	}
}

// TestPoolRetryHoldsNoRequest: while the pool retries a backend that
// failed (here beta, whose initialize hangs until its timeout), the other
// requests are served from the current view at once; before, every
// stateless request waited for the retry, so alpha's calls hung behind
// beta's initialize (seen under load: a modern client's prompts/get of
// alpha timed out while beta crashed).
func TestPoolRetryHoldsNoRequest(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := func(script string) *fakebackends.Backend {
		s, err := fakebackends.ParseScript([]byte(script), "b.yaml")
		if err != nil {
			t.Fatal(err)
		}
		fb, err := fakebackends.Start(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fb.Close() })
		return fb
	}
	alpha := start("name: alpha\nprotocol: legacy\ntools:\n  - {name: echo}\n")
	beta := start("name: beta\nprotocol: legacy\ntools:\n  - {name: echo}\nfaults:\n  - {kind: stall, match: {method: initialize}}\n")
	g := startPoolGateway(t, "name: t\nbackends:\n  - {name: alpha, url: \""+alpha.URL()+"\"}\n  - {name: beta, url: \""+beta.URL()+"\"}\n"+
		"timeouts: {initialize: 1s, call: 2s, close: 500ms}\n")
	if _, err := g.pool.ensure(ctx, false); err != nil { // alpha only: beta's initialize timed out
		t.Fatal(err)
	}
	g.pool.mu.Lock()
	g.pool.lastRetry = time.Time{} // a retry is due
	g.pool.mu.Unlock()
	retried := make(chan struct{})
	go func() {
		defer close(retried)
		_, _ = g.pool.ensure(ctx, true) // retries beta: hangs for its initialize timeout
	}()
	for {
		g.pool.mu.Lock()
		opening := g.pool.opening != nil
		g.pool.mu.Unlock()
		if opening {
			break
		}
		select {
		case <-retried:
			t.Fatal("the retry ended before it was seen under way")
		case <-time.After(time.Millisecond):
		}
	}
	agg, err := g.pool.ensure(ctx, false)
	select {
	case <-retried:
		t.Fatal("a request waited for the retry of beta")
	default:
	}
	if err != nil || agg == nil {
		t.Fatalf("ensure during the retry: %v", err)
	}
	<-retried
}

// startPoolGateway makes a gateway of config (not serving: the tests drive
// its pool), shut down when the test ends.
func startPoolGateway(t *testing.T, config string) *Gateway {
	t.Helper()
	cfg, err := ParseConfig([]byte(config), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := g.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return g
}
