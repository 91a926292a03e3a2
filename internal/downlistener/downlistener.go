// Package downlistener holds the MCP listener (Listener) and the loop
// (Reconcile) that fake backends and fault proxies share to apply `crash mode: down` faults (and other time-driven faults):
// both close their MCP listener while such a fault is in force and open it
// again on the same address when it ends.
package downlistener

import "time"

// Tick is how often Reconcile runs.
const Tick = 5 * time.Millisecond

// Reconcile calls reconcile every Tick until closed is closed.
func Reconcile(closed <-chan struct{}, reconcile func()) {
	t := time.NewTicker(Tick)
	defer t.Stop()
	for {
		select {
		case <-closed:
			return
		case <-t.C:
			reconcile()
		}
	}
}
