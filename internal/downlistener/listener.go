package downlistener

import (
	"context"
	"net"
	"net/http"
	"sync"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
)

// Listener is the MCP listener of a fake backend or a fault proxy, which a
// `crash mode: down` fault closes (new connections are refused, open ones
// dropped) and which opens again on the same address when the fault ends.
// The zero value is ready for Serve.
type Listener struct {
	mu     sync.Mutex
	addr   string
	serve  func(net.Listener)
	ln     net.Listener // nil while down
	conns  map[net.Conn]struct{}
	down   bool
	closed bool
}

// Serve serves ln with serve, which must not block (it starts the serving
// goroutine); after a down, each new listener is served so too.
func (l *Listener) Serve(ln net.Listener, serve func(net.Listener)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addr, l.ln, l.serve = ln.Addr().String(), ln, serve
	serve(ln)
}

// Addr is the listener's host:port, the same across down and up.
func (l *Listener) Addr() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.addr
}

// ConnState tracks the connections (http.Server.ConnState); one accepted
// just before the listener closed is reset.
func (l *Listener) ConnState(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch st {
	case http.StateNew:
		if l.down || l.closed {
			faults.ResetConn(c)
			return
		}
		if l.conns == nil {
			l.conns = map[net.Conn]struct{}{}
		}
		l.conns[c] = struct{}{}
	case http.StateHijacked, http.StateClosed:
		delete(l.conns, c)
	}
}

// SetDown closes the listener and every connection (down), or listens
// again on the same address. It reports whether the state changed; an
// error is a failure to listen again (it stays down: try again later).
// After Close it does nothing.
func (l *Listener) SetDown(down bool) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || down == l.down {
		return false, nil
	}
	if down {
		l.down = true
		if l.ln != nil {
			_ = l.ln.Close()
			l.ln = nil
		}
		for c := range l.conns {
			_ = c.Close()
			delete(l.conns, c)
		}
		return true, nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", l.addr)
	if err != nil {
		return false, err
	}
	l.down, l.ln = false, ln
	l.serve(ln)
	return true, nil
}

// Down reports whether the listener is down, or closed for good.
func (l *Listener) Down() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.down || l.closed
}

// Close marks the listener closed for good (its server closes it; SetDown
// does nothing from now on) and reports whether it was down, so that
// nothing listens.
func (l *Listener) Close() (wasDown bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return l.ln == nil
}
