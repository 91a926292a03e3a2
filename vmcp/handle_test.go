package vmcp_test

import (
	"context"
	"sync"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

type sessionLog struct {
	mu             sync.Mutex
	opened, closed []string
}

func (l *sessionLog) SessionOpened(s *vmcp.Session) {
	l.mu.Lock()
	l.opened = append(l.opened, s.ID())
	l.mu.Unlock()
}

func (l *sessionLog) SessionClosed(s *vmcp.Session) {
	l.mu.Lock()
	l.closed = append(l.closed, s.ID())
	l.mu.Unlock()
}

// TestBackendHandleAndSessionObserver: the hooks keepalive, health and the
// optimizer use.
func TestBackendHandleAndSessionObserver(t *testing.T) {
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	cfg, err := vmcp.ParseConfig([]byte(gwConfig(faultTimeouts, a, b)), "cfg")
	if err != nil {
		t.Fatal(err)
	}
	log := &sessionLog{}
	g, _ := vmcp.New(cfg, vmcp.WithSessionObserver(log))
	if err := g.Start(context.Background(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	c := connect(t, g.URL(), false)
	s, ok := g.Session(c.GetSessionId())
	if !ok {
		t.Fatal("no session")
	}
	h, ok := s.Backend("beta")
	if !ok || !h.HasTool("other") || h.HasTool("beta_other") {
		t.Fatalf("handle %v %v", ok, h)
	}
	ctx := ctxT(t, 5e9)
	if err := h.Exclusive(ctx, func(ctx context.Context) error { return h.Ping(ctx) }); err != nil {
		t.Errorf("ping: %v", err)
	}
	if err := h.CallTool(ctx, "other"); err != nil {
		t.Errorf("call: %v", err)
	}
	if tools, err := h.ListTools(ctx); err != nil || len(tools) != 2 {
		t.Errorf("list: %v %v", tools, err)
	}
	res, ok := s.CallTool(ctx, "beta_other", nil)
	if !ok || res.IsError || resultText(res) != "fine" {
		t.Errorf("session call: %v %+v", ok, res)
	}
	if _, ok := s.CallTool(ctx, "nope", nil); ok {
		t.Error("unknown tool found")
	}
	if err := g.Shutdown(ctxT(t, 5e9)); err != nil {
		t.Error(err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.opened) != 1 || len(log.closed) != 1 || log.opened[0] != s.ID() {
		t.Errorf("observer: %+v", log)
	}
}
