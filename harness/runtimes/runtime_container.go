package runtimes

// This file holds what the container runtime (package harness/runtimes/containers)
// needs from runtimes without runtimes importing a Docker client: the error
// that turns a missing precondition into a skipped scenario (the fake
// backends' control API client, AdminAPI, is in admin_client.go).

// SkipError says the environment lacks something a scenario needs that is
// not a gateway capability (no Docker engine, a target that cannot run in a
// container). Runners skip the scenario with Reason; they never pass it.
// Where the environment promises it (VMCP_CHAOS_REQUIRE_DOCKER=1), the
// runtime returns an ordinary error instead, and the scenario fails.
type SkipError struct {
	// Reason says what is missing.
	Reason string
}

func (e *SkipError) Error() string { return "skipped: " + e.Reason }
