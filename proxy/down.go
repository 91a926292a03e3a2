package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
)

// listener is the proxy's MCP listener, which a `crash mode: down` fault
// closes (new connections are refused, open ones dropped) and which opens
// again on the same address when the fault ends.
type listener struct {
	mu     sync.Mutex
	addr   string
	ln     net.Listener // nil while down
	down   bool
	closed bool
	conns  map[net.Conn]struct{}
}

// connState tracks the MCP connections (http.Server.ConnState).
func (l *listener) connState(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateNew:
		if l.conns == nil {
			l.conns = map[net.Conn]struct{}{}
		}
		l.conns[c] = struct{}{}
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
	}
}

// serve serves MCP on ln until it closes.
func (p *Proxy) serve(ln net.Listener) {
	p.wg.Go(func() {
		err := p.mcp.Serve(ln)
		p.mcpLn.mu.Lock()
		quiet := p.mcpLn.down || p.mcpLn.closed
		p.mcpLn.mu.Unlock()
		if err != nil && !errors.Is(err, http.ErrServerClosed) && !quiet {
			p.logger.Error("serve", "err", err)
		}
	})
}

// reconcile closes or reopens the MCP listener as `down` faults say, and
// expires sessions when a scheduled session_expire is due.
func (p *Proxy) reconcile() {
	down, expire := p.engine.Scheduled()
	if expire {
		p.ExpireSessions()
	}
	l := &p.mcpLn
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || down == l.down {
		return
	}
	if down {
		l.down = true
		if l.ln != nil {
			_ = l.ln.Close()
			l.ln = nil
		}
		for c := range l.conns {
			_ = c.Close()
		}
		p.logger.Info("down: the proxy's listener is closed")
		return
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", l.addr)
	if err != nil {
		p.logger.Error("cannot listen again (retrying)", "addr", l.addr, "err", err)
		return
	}
	l.down, l.ln = false, ln
	p.serve(ln)
	p.logger.Info("up: the proxy listens again", "addr", l.addr)
}
