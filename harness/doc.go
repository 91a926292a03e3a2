// Package harness runs a gateway under test (a vMCP) in front of scriptable
// fake MCP backends and records what clients see. It is the facade that
// wires its sub-packages together (see README.md for the map):
//
//   - targets: what is under test (profiles, Exec and Reference targets,
//     config templates, the health and session state APIs);
//   - runtimes: where the topology runs (in-process, processes, and
//     containers in runtimes/containers; owned processes and directories);
//   - history: what clients saw (the MCP client, call classification, the
//     recorder, results and findings) that checks are judged from.
//
// A Topology names the backends (each a fakebackends.Script and a
// runtimes.BackendRuntime) and the targets.Target. Start brings it up as
// one unit and returns an Env; Env.Close tears it down within a deadline
// even when backends stall. Clients made with Env.Client record every call
// on the Env's history.Recorder, together with fault injections and the
// health and breaker transitions a targets.HealthPoller observes.
//
// The Gomega matchers live in package harness/matchers.
package harness
