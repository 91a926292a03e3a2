package targets

import (
	"context"
	"fmt"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// impostorSettle is how long a gateway whose port answered from a process
// outside its process group is given to exit "address already in use"
// before the harness takes the answer as the gateway's own (one that
// daemonizes away from its group).
const impostorSettle = 5 * time.Second

// waitOwnListener returns once the listener on port is the gateway's: held
// by a process of its group, or not visible (another network namespace,
// another user). The port FreePort picked may have been taken meanwhile by
// another program, whose answer then made the gateway look ready while
// the gateway was failing to bind: such a gateway exits with "address
// already in use", and that is returned as a *portInUseError (Start tries
// another port). The same when nothing listens on the port any more (the
// other program answered and closed: .ci/load, 2026-12-03, a stand-in
// gateway taken as ready, then "connection refused").
func (g *execGateway) waitOwnListener(ctx context.Context, port int) error {
	settle := time.NewTimer(impostorSettle)
	defer settle.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		// None listening: whoever answered the ready URL has gone, and
		// the gateway has not bound (it may be exiting "address already
		// in use"): wait, as for an impostor.
		ours, holders, known, none := listenerHolders(port, g.cmd.Process.Pid)
		if ours || !known && !none {
			return nil
		}
		select {
		case <-g.exited:
			return g.portInUse(fmt.Errorf("harness: exec target %s: gateway exited before it was ready (%v); port %d answered from pid %v, not the gateway's%s",
				g.target, g.waitErr, port, holders, runtimes.QuoteTail(g.output.String())))
		case <-settle.C:
			return nil
		case <-ctx.Done():
			return nil // the readiness deadline is waitReady's and waitTools' to report
		case <-tick.C:
		}
	}
}
