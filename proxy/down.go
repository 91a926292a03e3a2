package proxy

import (
	"errors"
	"net"
	"net/http"
)

// serve serves MCP on ln until it closes.
func (p *Proxy) serve(ln net.Listener) {
	p.wg.Go(func() {
		if err := p.mcp.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && !p.mcpLn.Down() {
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
	switch changed, err := p.mcpLn.SetDown(down); {
	case err != nil:
		p.logger.Error("cannot listen again (retrying)", "addr", p.mcpLn.Addr(), "err", err)
	case changed && down:
		p.logger.Info("down: the proxy's listener is closed")
	case changed:
		p.logger.Info("up: the proxy listens again", "addr", p.mcpLn.Addr())
	}
}
