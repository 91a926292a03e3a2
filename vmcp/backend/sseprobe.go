package backend

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// streamProbeOp is the op of the ping sent after a timed-out call on a
// legacy SSE connection.
const streamProbeOp = "stream-probe"

// probeAfterTimeout checks, in the background, that a legacy SSE
// connection whose call just timed out still has a live stream: responses
// arrive only on the stream, and a stream whose peer vanished (a backend
// container back on a new address, a network path gone for good) never
// ends by itself, so every later call on it would time out too. A request
// (tools/list) that gets no answer within a third of the call timeout kills the
// connection; the next call (which waits for the probe: AliveAfterProbe)
// opens a new one. A probe that is answered (a slow or stalled tool on a
// live stream) changes nothing. One probe at a time; Close waits for it.
func (c *Conn) probeAfterTimeout(op string, timeout time.Duration) {
	if c.backend.Transport != config.TransportSSE || op == "initialize" || op == streamProbeOp || c.client == nil {
		return
	}
	c.mu.Lock()
	if c.bgClosed || c.probe != nil {
		c.mu.Unlock()
		return
	}
	done := make(chan struct{})
	c.probe = done
	c.bg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.bg.Done()
		defer func() {
			c.mu.Lock()
			c.probe = nil
			c.mu.Unlock()
			close(done)
		}()
		d := timeout / 3
		// tools/list, not ping: on the stateless revision mcp-go's Ping
		// sends nothing.
		be := c.Invoke(c.life, streamProbeOp, d, func(ctx context.Context) error {
			_, err := c.client.ListTools(ctx, mcp.ListToolsRequest{})
			return err
		})
		if be != nil && be.Kind == KindTimeout {
			c.fail(fmt.Errorf("%w: SSE stream silent (a tools/list after a timed-out call got no answer within %s)", io.ErrUnexpectedEOF, d))
		}
	}()
}

// AliveUnprobed reports whether the connection is alive with no stream
// probe under way: usable at once, without waiting (AliveAfterProbe).
func (c *Conn) AliveUnprobed() bool {
	c.mu.Lock()
	probing := c.probe != nil
	c.mu.Unlock()
	return !probing && c.Alive()
}

// AliveAfterProbe is Alive, once a stream probe under way (after a
// timed-out call) has ended or ctx has.
func (c *Conn) AliveAfterProbe(ctx context.Context) bool {
	c.mu.Lock()
	done := c.probe
	c.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	return c.Alive()
}
