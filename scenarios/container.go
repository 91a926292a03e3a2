package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/containers"
)

// LabelContainer labels the scenarios that run the backends and the
// gateway as containers (harness/containers); they are skipped when no
// Docker engine answers, and fail then when VMCP_CHAOS_REQUIRE_DOCKER=1.
const LabelContainer = "container"

// Container scenarios: alpha (streamable HTTP, the bystander), beta (SSE)
// and gamma (streamable HTTP) run as containers on a private network with
// the gateway, which reaches them by alias. Faults go into beta and gamma
// together, so each scenario covers both backend transports; it is run on
// both client revisions.
const (
	// containerCallTimeout is the gateway's backend call timeout.
	containerCallTimeout = 1500 * time.Millisecond
	// containerClientTimeout bounds a client call: well past the gateway's
	// call timeout, so a gateway that does not bound its calls is seen.
	containerClientTimeout = 8 * time.Second
	// containerFailFast is how soon a call must fail naming the backend
	// once its container is killed or stopped.
	containerFailFast = time.Second
	// containerTimeoutSlack is how long past the call timeout a call to a
	// frozen or partitioned backend may take (a loaded machine).
	containerTimeoutSlack = 1500 * time.Millisecond
	// containerRecovery bounds the calls after an undo: at most one failed.
	containerRecoveryCalls = 2
)

var containerFaulty = []string{beta, gamma}

// containerScenarios is the container group on both revisions.
func containerScenarios() []Scenario {
	var out []Scenario
	add := func(group, desc string, run func(ctx context.Context, env *harness.Env, g gomega.Gomega, rev harness.Revision)) {
		for _, rev := range []harness.Revision{harness.RevisionLegacy, harness.RevisionModern} {
			out = append(out, Scenario{
				Name: group + "/" + string(rev), Group: group, Description: desc,
				Labels:   []string{LabelContainer, group, string(rev), string(fakebackends.TransportStreamableHTTP), string(fakebackends.TransportSSE)},
				Timeout:  3 * time.Minute,
				Topology: containerTopology,
				Run: func(ctx context.Context, env *harness.Env, g gomega.Gomega) {
					run(ctx, env, g, rev)
				},
			})
		}
	}
	add("container-kill", "SIGKILL, then a graceful stop, of backend containers: each time the call in flight and the next call fail naming the backend within 1 s; after each start, at most one failed call, then full service", runContainerKillStop)
	add("container-freeze", "paused (frozen) backend containers: calls end at the call timeout naming the backend; after unpause, at most one failed call", runContainerFreeze)
	add("container-partition", "backend containers off the network: every call, one on an idle keep-alive connection too, ends at the call timeout naming the backend; after reconnect, at most one failed call; then off again and back on a new address: at most one failed call, then full service", runContainerPartition)
	add("container-gateway-restart", "restart of the gateway container: the old session gets a clean error at once, a new session works", runContainerGatewayRestart)
	return out
}

// containerTopology: three backends and the gateway, as containers.
func containerTopology() harness.Topology {
	ct := containers.NewTopology()
	return harness.Topology{
		Backends: []harness.BackendSpec{
			{Script: script(alpha, fakebackends.TransportStreamableHTTP), Runtime: ct},
			{Script: script(beta, fakebackends.TransportSSE), Runtime: ct},
			{Script: script(gamma, fakebackends.TransportStreamableHTTP), Runtime: ct},
		},
		WrapTarget:         ct.WrapTarget,
		GatewayCallTimeout: containerCallTimeout,
		ClientOptions:      []harness.ClientOption{harness.WithCallTimeout(containerClientTimeout)},
	}
}

// containerAct runs a container fault verb on backend (or the gateway,
// backend "gateway") and records it on the timeline.
func containerAct(env *harness.Env, backend, action string, fn func(containers.Faulter) error) error {
	start := time.Now()
	var f containers.Faulter
	var err error
	if backend == "gateway" {
		f, _ = env.Gateway().(containers.Faulter)
	} else {
		f, _ = env.Backend(backend).(containers.Faulter)
	}
	if f == nil {
		err = fmt.Errorf("%s is not a container: %w", backend, harness.ErrNotSupported)
	} else {
		err = fn(f)
	}
	rec := harness.FaultRecord{Backend: backend, Action: action}
	if err != nil {
		rec.Error = err.Error()
	}
	env.Recorder().RecordFaultSpan(rec, start)
	return err
}

// eachFaulty runs a verb on beta and gamma in parallel.
func eachFaulty(ctx context.Context, env *harness.Env, g gomega.Gomega, action string, fn func(context.Context, containers.Faulter) error) {
	errs := make(chan error, len(containerFaulty))
	for _, b := range containerFaulty {
		go func() {
			errs <- containerAct(env, b, action, func(f containers.Faulter) error { return fn(ctx, f) })
		}()
	}
	for range containerFaulty {
		g.ExpectWithOffset(1, <-errs).NotTo(gomega.HaveOccurred(), "%s", action)
	}
}

// inFlight starts a slow call to each faulty backend (a latency fault holds
// it at the backend) and returns their channels once they are in flight.
func inFlight(ctx context.Context, env *harness.Env, g gomega.Gomega, c *harness.Client) map[string]<-chan *harness.Call {
	out := map[string]<-chan *harness.Call{}
	for _, b := range containerFaulty {
		must(g, env.SetFaults(ctx, b, fakebackends.Fault{Kind: fakebackends.KindLatency, Delay: fakebackends.Duration(20 * time.Second),
			Match: fakebackends.Match{Method: "tools/call", Tool: "slow"}}), "hold %s's slow calls", b)
		ch := make(chan *harness.Call, 1)
		go func() { ch <- c.CallTool(ctx, tool(b, "slow"), nil) }()
		out[b] = ch
	}
	sleep(ctx, 500*time.Millisecond)
	for b, ch := range out {
		g.Expect(ch).To(gomega.BeEmpty(), "the slow call to %s is in flight before the fault", b)
	}
	return out
}

// expectNamed asserts a call failed, named backend and returned within d.
func expectNamed(g gomega.Gomega, call *harness.Call, backend string, d time.Duration, why string) {
	g.ExpectWithOffset(1, call).NotTo(gomega.BeNil(), "%s: the call returned", why)
	g.ExpectWithOffset(1, call.Outcome).To(gomega.Equal(harness.OutcomeBackendUnavailable),
		"%s: want a failure naming %s within %s; got %s after %s: %s", why, backend, d, call.Outcome, call.Took(), call.Text())
	g.ExpectWithOffset(1, call.Backend).To(gomega.Equal(backend), "%s: the backend named (%s)", why, call.Text())
	g.ExpectWithOffset(1, call.Took()).To(gomega.BeNumerically("<=", d), "%s: %s took %s (bound %s): %s", why, call.Target, call.Took(), d, call.Text())
}

// expectAtTimeout asserts a call failed naming backend at the gateway's
// call timeout: not before it (the backend never answered), and not much
// after it (the gateway bounded the call).
func expectAtTimeout(g gomega.Gomega, call *harness.Call, backend, why string) {
	g.ExpectWithOffset(1, call.Outcome).To(gomega.Equal(harness.OutcomeBackendUnavailable),
		"%s: want a failure naming %s at the call timeout (%s); got %s after %s: %s", why, backend, containerCallTimeout, call.Outcome, call.Took(), call.Text())
	g.ExpectWithOffset(1, call.Backend).To(gomega.Equal(backend), "%s: the backend named (%s)", why, call.Text())
	g.ExpectWithOffset(1, call.Took()).To(gomega.BeNumerically("<=", containerCallTimeout+containerTimeoutSlack),
		"%s: %s took %s, past the call timeout %s + %s", why, call.Target, call.Took(), containerCallTimeout, containerTimeoutSlack)
}

// recovered asserts each faulty backend, and alpha, give at most one
// failed call, then full service (three calls in a row).
func recovered(ctx context.Context, g gomega.Gomega, env *harness.Env, c *harness.Client, after string) {
	for _, b := range append([]string{alpha}, containerFaulty...) {
		failed := containerCallsUntilOK(ctx, g, c, tool(b, "echo"), containerRecoveryCalls)
		env.Recorder().MaxFigure("failed_calls_after_"+after, float64(failed))
		g.ExpectWithOffset(1, failed).To(gomega.BeNumerically("<=", 1), "failed calls to %s after %s", b, after)
		for i := range 3 {
			expectOK(g, c.CallTool(ctx, tool(b, "echo"), echoArgs(fmt.Sprintf("%s %d", after, i))), b+" in full service after "+after)
		}
	}
}

// runContainerKillStop: SIGKILL and start, then a graceful stop and
// start, in one topology.
func runContainerKillStop(ctx context.Context, env *harness.Env, g gomega.Gomega, rev harness.Revision) {
	runContainerKill(false)(ctx, env, g, rev)
	runContainerKill(true)(ctx, env, g, rev)
}

func runContainerKill(graceful bool) func(ctx context.Context, env *harness.Env, g gomega.Gomega, rev harness.Revision) {
	action, verb := "container-kill", func(ctx context.Context, f containers.Faulter) error { return f.Kill(ctx) }
	if graceful {
		action, verb = "container-stop", func(ctx context.Context, f containers.Faulter) error { return f.Stop(ctx) }
	}
	return func(ctx context.Context, env *harness.Env, g gomega.Gomega, rev harness.Revision) {
		c := client(ctx, env, g, rev)
		for _, b := range append([]string{alpha}, containerFaulty...) {
			expectOK(g, c.CallTool(ctx, tool(b, "echo"), echoArgs("before")), b+" before "+action)
		}
		flying := inFlight(ctx, env, g, c)
		eachFaulty(ctx, env, g, action, verb)
		down := time.Now()
		for _, b := range containerFaulty {
			var call *harness.Call
			select {
			case call = <-flying[b]:
			case <-time.After(containerClientTimeout + time.Second):
			}
			g.Expect(call).NotTo(gomega.BeNil(), "the call in flight to %s returned", b)
			env.Recorder().MaxFigure("time_to_error_ms.in_flight", ms(time.Since(down)))
			g.Expect(call.Outcome).To(gomega.Equal(harness.OutcomeBackendUnavailable), "the call in flight to %s at the %s: %s after %s: %s", b, action, call.Outcome, call.Took(), call.Text())
			g.Expect(call.Backend).To(gomega.Equal(b), "the call in flight names %s: %s", b, call.Text())
		}
		// The in-flight calls ended within containerFailFast of the verb's
		// return (they cannot end before the container is down).
		g.Expect(time.Since(down)).To(gomega.BeNumerically("<=", containerFailFast), "the calls in flight ended within %s of the %s", containerFailFast, action)
		for _, b := range containerFaulty {
			next := c.CallTool(ctx, tool(b, "echo"), echoArgs("down"))
			env.Recorder().MaxFigure("time_to_error_ms.next_call", ms(next.Took()))
			expectNamed(g, next, b, containerFailFast, "the next call after the "+action)
		}
		expectOK(g, c.CallTool(ctx, tool(alpha, "echo"), echoArgs("bystander")), "alpha while the others are down")
		eachFaulty(ctx, env, g, "container-start", func(ctx context.Context, f containers.Faulter) error { return f.StartAgain(ctx) })
		recovered(ctx, g, env, c, "start")
	}
}

func runContainerFreeze(ctx context.Context, env *harness.Env, g gomega.Gomega, rev harness.Revision) {
	c := client(ctx, env, g, rev)
	for _, b := range containerFaulty {
		expectOK(g, c.CallTool(ctx, tool(b, "echo"), echoArgs("before")), b+" before the freeze")
	}
	eachFaulty(ctx, env, g, "container-pause", func(ctx context.Context, f containers.Faulter) error { return f.Pause(ctx) })
	resumed := false
	defer func() {
		if !resumed {
			for _, b := range containerFaulty {
				_ = containerAct(env, b, "container-unpause", func(f containers.Faulter) error { return f.Resume(context.WithoutCancel(ctx)) })
			}
		}
	}()
	for _, b := range containerFaulty {
		call := c.CallTool(ctx, tool(b, "echo"), echoArgs("frozen"))
		env.Recorder().MaxFigure("time_to_error_ms.frozen", ms(call.Took()))
		expectAtTimeout(g, call, b, "a call to frozen "+b)
	}
	expectOK(g, c.CallTool(ctx, tool(alpha, "echo"), echoArgs("bystander")), "alpha while the others are frozen")
	eachFaulty(ctx, env, g, "container-unpause", func(ctx context.Context, f containers.Faulter) error { return f.Resume(ctx) })
	resumed = true
	recovered(ctx, g, env, c, "unpause")
}

// runContainerPartition: a partition undone on the same addresses, then
// one undone on new addresses, in one topology (the same two clients).
func runContainerPartition(ctx context.Context, env *harness.Env, g gomega.Gomega, rev harness.Revision) {
	active := client(ctx, env, g, rev)
	idle := client(ctx, env, g, rev)
	partition(false)(ctx, env, g, active, idle)
	partition(true)(ctx, env, g, active, idle)
}

func partition(newIP bool) func(ctx context.Context, env *harness.Env, g gomega.Gomega, active, idle *harness.Client) {
	return func(ctx context.Context, env *harness.Env, g gomega.Gomega, active, idle *harness.Client) {
		for _, b := range containerFaulty {
			expectOK(g, active.CallTool(ctx, tool(b, "echo"), echoArgs("before")), b+" before the partition")
			expectOK(g, idle.CallTool(ctx, tool(b, "echo"), echoArgs("before")), b+" before the partition (idle client)")
		}
		eachFaulty(ctx, env, g, "network-disconnect", func(ctx context.Context, f containers.Faulter) error { return f.Disconnect(ctx) })
		undone := false
		reconnect := func(ctx context.Context, f containers.Faulter) error { return f.Reconnect(ctx) }
		action := "network-reconnect"
		if newIP {
			reconnect, action = func(ctx context.Context, f containers.Faulter) error { return f.ReconnectNewIP(ctx) }, "network-reconnect-new-ip"
		}
		defer func() {
			if !undone {
				for _, b := range containerFaulty {
					_ = containerAct(env, b, action, func(f containers.Faulter) error { return reconnect(context.WithoutCancel(ctx), f) })
				}
			}
		}()
		if !newIP {
			for _, b := range containerFaulty {
				call := active.CallTool(ctx, tool(b, "echo"), echoArgs("partitioned"))
				env.Recorder().MaxFigure("time_to_error_ms.partitioned", ms(call.Took()))
				expectAtTimeout(g, call, b, "a call to partitioned "+b)
			}
			// The idle client's backend connections sat idle through
			// the partition (keep-alive): its calls are bounded too.
			for _, b := range containerFaulty {
				call := idle.CallTool(ctx, tool(b, "echo"), echoArgs("idle"))
				env.Recorder().MaxFigure("time_to_error_ms.partitioned_idle", ms(call.Took()))
				expectAtTimeout(g, call, b, "a call on an idle connection to partitioned "+b)
			}
			expectOK(g, active.CallTool(ctx, tool(alpha, "echo"), echoArgs("bystander")), "alpha during the partition")
		}
		eachFaulty(ctx, env, g, action, reconnect)
		undone = true
		after := "reconnect"
		if newIP {
			after = "reconnect_new_ip"
		}
		recovered(ctx, g, env, active, after)
		recovered(ctx, g, env, idle, after)
	}
}

func runContainerGatewayRestart(ctx context.Context, env *harness.Env, g gomega.Gomega, rev harness.Revision) {
	c := client(ctx, env, g, rev)
	for _, b := range append([]string{alpha}, containerFaulty...) {
		expectOK(g, c.CallTool(ctx, tool(b, "echo"), echoArgs("before")), b+" before the gateway restart")
	}
	must(g, containerAct(env, "gateway", "gateway-restart", func(f containers.Faulter) error {
		r, ok := f.(interface{ Restart(context.Context) error })
		if !ok {
			return harness.ErrNotSupported
		}
		return r.Restart(ctx)
	}), "restart the gateway container")
	// The old client: a clean error (the gateway answered or refused),
	// at once, never a hang; a stateless client may simply go on.
	old := c.CallTool(ctx, tool(beta, "echo"), echoArgs("after restart"))
	env.Recorder().SetFigure("time_to_error_ms.old_session", ms(old.Took()))
	g.Expect(old.Outcome).NotTo(gomega.Equal(harness.OutcomeTimeout), "the old session after the gateway restart: %s after %s: %s", old.Outcome, old.Took(), old.Text())
	g.Expect(old.Took()).To(gomega.BeNumerically("<=", containerFailFast), "the old session's call after the gateway restart took %s: %s", old.Took(), old.Text())
	if rev == harness.RevisionLegacy {
		g.Expect(old.Outcome).NotTo(gomega.Equal(harness.OutcomeOK), "the old legacy session is gone after the gateway restart")
	}
	fresh := client(ctx, env, g, rev)
	for _, b := range append([]string{alpha}, containerFaulty...) {
		expectOK(g, fresh.CallTool(ctx, tool(b, "echo"), echoArgs("new session")), b+" in a new session after the gateway restart")
	}
}

// Runtimes of RunConfig.Runtime.
const (
	// RuntimeDefault runs each scenario's backends where it says (in
	// process unless it needs processes).
	RuntimeDefault = ""
	// RuntimeContainer runs the HTTP backends of every scenario as
	// containers (published on 127.0.0.1, since the gateway may run
	// elsewhere); the container scenarios run the gateway in one too.
	RuntimeContainer = "container"
)

// ParseRuntime checks a --runtime / $VMCP_CHAOS_RUNTIME value.
func ParseRuntime(s string) (string, error) {
	switch s {
	case RuntimeDefault, "in-process", "default":
		return RuntimeDefault, nil
	case RuntimeContainer:
		return RuntimeContainer, nil
	}
	return "", fmt.Errorf("unknown runtime %q (want container, or in-process for the default)", s)
}

// containerize puts every HTTP backend of topo that runs in process into
// a container (one network for the topology). Process and stdio backends
// keep their runtime: their scenarios signal processes.
func containerize(topo *harness.Topology) {
	if topo.WrapTarget != nil {
		return // already a container topology
	}
	ct := containers.NewTopology()
	for i, b := range topo.Backends {
		if b.Script == nil || b.Script.Transport == fakebackends.TransportStdio {
			continue
		}
		switch b.Runtime.(type) {
		case nil, harness.InProcess:
			topo.Backends[i].Runtime = ct
		}
	}
}

// PrepareContainers connects to the Docker engine (a bounded probe) and
// builds the run's image when runtime is RuntimeContainer or any of
// selected is a container scenario, before the first scenario runs: no
// scenario pays for the build, and the engine's goroutines predate every
// scenario's leak snapshot. Without Docker it returns nil (the container
// scenarios then skip with the probe's reason) unless
// VMCP_CHAOS_REQUIRE_DOCKER=1, where the error is returned. It returns
// what it prepared, for a progress line ("" when nothing).
func PrepareContainers(ctx context.Context, selected []Scenario, runtime string) (string, error) {
	need := runtime == RuntimeContainer
	for _, sc := range selected {
		need = need || sc.HasLabel(LabelContainer)
	}
	if !need {
		return "", nil
	}
	e, err := containers.Get(ctx)
	if containers.IsSkip(err) {
		return "container scenarios will be skipped: " + err.Error(), nil
	}
	if err != nil {
		return "", err
	}
	img, err := e.Image(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("containers: run %s, image %s", e.RunID(), img), nil
}

// Helpers of this file (self-contained; the catalogue's kit judges per
// check, these scenarios still assert with g and end at the first failure).

// gamma is the second faulty backend of the container scenarios.
const gamma = "gamma"

// tool names a backend's tool as the reference exposes it ("<backend>_").
func tool(backend, name string) string { return backend + "_" + name }

// client connects a client on rev, failing the scenario when it cannot.
func client(ctx context.Context, env *harness.Env, g gomega.Gomega, rev harness.Revision) *harness.Client {
	c, err := env.Client(ctx, rev)
	g.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "connect a %s client", rev)
	return c
}

// must fails the scenario when err is not nil.
func must(g gomega.Gomega, err error, what string, args ...any) {
	g.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), fmt.Sprintf(what, args...))
}

// expectOK asserts a call succeeded.
func expectOK(g gomega.Gomega, call *harness.Call, why string) {
	g.ExpectWithOffset(1, call.Outcome).To(gomega.Equal(harness.OutcomeOK),
		"%s: %s %s ended %s: %s", why, call.Method, call.Target, call.Outcome, call.Text())
}

// containerCallsUntilOK calls name until it succeeds, at most max times,
// and returns how many failed first (failing the scenario when none
// succeeded).
func containerCallsUntilOK(ctx context.Context, g gomega.Gomega, c *harness.Client, name string, max int) int {
	failed, last := callsUntilOK(ctx, c, name, max)
	g.ExpectWithOffset(1, last.Outcome).To(gomega.Equal(harness.OutcomeOK), "%s never succeeded in %d calls: %s", name, max, last.Text())
	return failed
}
