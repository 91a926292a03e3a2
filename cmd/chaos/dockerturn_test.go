package main

import (
	"sync"
	"testing"
)

// dockerTurn is held by a test while its chaos run drives the Docker
// engine (builds an image, starts and removes containers and networks):
// the parallel tests (see TestMain) take turns on the engine, one run at
// a time as when they all ran one by one, while the tests beside them
// that need no engine go on. A busy engine is slow to remove what a run
// made, and chaos run bounds that removal (30 s).
var dockerTurn sync.Mutex

// takeDockerTurn waits for the engine's turn and holds it until t ends.
func takeDockerTurn(t *testing.T) {
	t.Helper()
	dockerTurn.Lock()
	t.Cleanup(dockerTurn.Unlock)
}
