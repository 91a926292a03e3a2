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
	cfg, err := ParseConfig([]byte("name: t\nbackends:\n  - {name: beta, url: \""+fb.URL()+"\"}\ntimeouts: {initialize: 2s, call: 2s, close: 500ms}\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := g.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}()
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
