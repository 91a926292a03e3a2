package vmcp_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"

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
	t.Parallel()
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	log := &sessionLog{}
	g := startGatewayShutByTest(t, gwConfig(faultTimeouts, a, b), vmcp.WithSessionObserver(log))
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

// TestGoAPIErrors: through the Go API (a session's backend handle) a backend
// failure is a *vmcp.BackendError that errors.As finds, errors.Is matches
// ErrBackendUnavailable (not for a JSON-RPC error), and a timeout matches
// context.DeadlineExceeded.
func TestGoAPIErrors(t *testing.T) {
	t.Parallel()
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	g := startGateway(t, gwConfig(faultTimeouts, a, b))
	c := connect(t, g.URL(), false)
	s, ok := g.Session(c.GetSessionId())
	if !ok {
		t.Fatal("no gateway session")
	}
	h, ok := s.Backend("beta")
	if !ok {
		t.Fatal("no beta handle")
	}
	ctx := ctxT(t, 10*time.Second)
	onEcho := faults.Match{Method: "tools/call", Tool: "echo"}
	cases := []struct {
		name        string
		fault       faults.Fault
		kind        vmcp.ErrorKind
		unavailable bool
		deadline    bool
	}{
		{"http 403", faults.Fault{Kind: faults.KindHTTPStatus, Match: onEcho, Params: &faults.HTTPStatus{Status: 403}}, vmcp.KindHTTPStatus, true, false},
		{"stall", faults.Fault{Kind: faults.KindStall, Match: onEcho}, vmcp.KindTimeout, true, true},
		{"jsonrpc error", faults.Fault{Kind: faults.KindJSONRPCError, Match: onEcho, Params: &faults.JSONRPCError{Code: -32603, Message: "kaput"}}, vmcp.KindJSONRPCError, false, false},
	}
	for _, tc := range cases {
		if err := b.SetFaults(tc.fault); err != nil {
			t.Fatal(err)
		}
		err := h.CallTool(ctx, "echo")
		b.ClearFaults()
		t.Logf("%s: %v", tc.name, err)
		var be *vmcp.BackendError
		if !errors.As(err, &be) {
			t.Errorf("%s: errors.As(%v, *BackendError) is false", tc.name, err)
			continue
		}
		if be.Backend != "beta" || be.Op != "tools/call" || be.Kind != tc.kind {
			t.Errorf("%s: BackendError{%q %q %q}, want {beta tools/call %s}", tc.name, be.Backend, be.Op, be.Kind, tc.kind)
		}
		if got := errors.Is(err, vmcp.ErrBackendUnavailable); got != tc.unavailable {
			t.Errorf("%s: errors.Is(err, ErrBackendUnavailable) = %v, want %v", tc.name, got, tc.unavailable)
		}
		if got := errors.Is(err, context.DeadlineExceeded); got != tc.deadline {
			t.Errorf("%s: errors.Is(err, context.DeadlineExceeded) = %v, want %v", tc.name, got, tc.deadline)
		}
	}
	if err := h.CallTool(ctx, "echo"); err != nil {
		t.Errorf("after the faults: %v", err)
	}
}
