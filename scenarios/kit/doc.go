// Package kit is what a scenario author needs to write an acceptance
// scenario against any vMCP gateway: clients per protocol revision
// (Kit.Client), a backend's tools, resources and prompts found under
// whatever names the gateway exposes them (Kit.Tool, Kit.Resource,
// Kit.Prompt: discovered by origin marker, with the target's tool name
// pattern as fallback), the fixture backends (Script, TwoBackends), fault
// helpers (Kit.SetFaults, OnCall, OnTool), named checks judged one by one
// (Kit.Check, Kit.CheckCall, Kit.CheckIf: a failed check is recorded with
// its evidence and the scenario goes on), one polling helper (Until),
// figures (Kit.Figure, Ms), Prometheus scrapes (ScrapeMetrics) and a
// watch on the harness's own scheduling stalls (the runner's, WithStalls;
// WatchStalls outside it, which also samples the gateway's wait for a
// CPU), for timing bounds that must hold on a loaded machine.
//
// A scenario body gets a started *harness.Env and a gomega.Gomega from the
// runner (runner.Run) and makes a Kit of them:
//
//	k := kit.New(ctx, env, g)
//	c := k.Client(history.RevisionLegacy)
//	k.SetFaults(kit.Beta, kit.OnCall(faults.Fault{Kind: faults.KindHTTPStatus, Status: 403}))
//	k.CheckCall("403 names beta", c.CallTool(ctx, k.Tool(kit.Beta, "echo"), nil), matchers.BeBackendUnavailable(kit.Beta))
//
// Assert with the scenario's Gomega (k.G) only for what the rest of the
// scenario cannot do without from the gateway (a client that does not
// connect): such a failure ends the scenario, failed. What the harness
// itself cannot do (a fault it cannot set, a backend it cannot signal)
// ends it through Must or HarnessMust, inconclusive: no verdict on the
// gateway. Everything the gateway is held to is a named check.
package kit
