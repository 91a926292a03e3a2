package main

import (
	"testing"
)

// dockerTurns is how many tests drive the Docker engine at once.
const dockerTurns = 2

// dockerTurn is held by a test while its chaos run drives the Docker
// engine (builds an image, starts and removes containers and networks):
// the parallel tests (see TestMain) take turns on the engine, dockerTurns
// runs at a time, while the tests beside them that need no engine go on.
// A busy engine is slow to remove what a run made, and chaos run bounds
// that removal (30 s); the runs' container topologies also take the
// host-wide container slots (runner.ContainerSlots), shared with any
// other suite on this host.
var dockerTurn = make(chan struct{}, dockerTurns)

// takeDockerTurn waits for the engine's turn and holds it until t ends.
func takeDockerTurn(t *testing.T) {
	t.Helper()
	dockerTurn <- struct{}{}
	t.Cleanup(func() { <-dockerTurn })
}
