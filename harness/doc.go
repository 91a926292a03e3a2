// Package harness runs a gateway under test (a vMCP) in front of scriptable
// fake MCP backends and records what clients see.
//
// A Topology names the backends (each a fakebackends.Script and a
// BackendRuntime: in-process, or a real `chaos backend` process that can be
// SIGKILLed and SIGSTOPped) and the Target (the reference vMCP in-process, or
// any gateway binary started from a command line and a config template).
// Start brings it up as one unit and returns an Env; Env.Close tears it down
// within a deadline even when backends stall.
//
// Clients made with Env.Client are real mcp-go clients whose every call has
// a deadline and is recorded on the Env's Recorder, together with fault
// injections and the health and breaker transitions a HealthPoller observes.
// The Recorder's timeline is written as versioned JSON (see Results).
//
// The Gomega matchers live in package harness/matchers.
package harness
