package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/matchers"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
)

// The bodies of the container scenarios. Each judges named checks with
// the kit (a failed check is recorded with its evidence and the scenario
// goes on); only a fault verb the harness cannot perform ends a scenario,
// since the topology is then in no known state.

// containerAct runs a container fault verb on backend (or the gateway,
// backend "gateway") and records it on the timeline.
func containerAct(env *harness.Env, backend, action string, fn func(containers.Faulter) error) error {
	return env.Recorder().RecordAction(history.FaultRecord{Backend: backend, Action: action}, func() error {
		f := faulterOf(env, backend)
		if f == nil {
			return fmt.Errorf("%s is not a container: %w", backend, runtimes.ErrNotSupported)
		}
		return fn(f)
	})
}

// faulterOf is backend's container (or the gateway's, backend "gateway"),
// nil when it is not one.
func faulterOf(env *harness.Env, backend string) containers.Faulter {
	var f containers.Faulter
	if backend == "gateway" {
		f, _ = env.Gateway().(containers.Faulter)
	} else {
		f, _ = env.Backend(backend).(containers.Faulter)
	}
	return f
}

// wentDown is when backend's container went down by verb, begun at start
// and returned at returned, and what that moment is, for a check's
// Observed text: the exit time the engine recorded (Faulter.DownAt), or,
// when that is unreadable or not within the verb, the verb's start
// (never its return: under load the engine's verb can return seconds
// after the container went down, which would hide that much lateness).
func wentDown(k *kit.Kit, backend, verb string, start, returned time.Time) (time.Time, string) {
	var at time.Time
	err := fmt.Errorf("%s is not a container", backend)
	if f := faulterOf(k.Env, backend); f != nil {
		at, err = f.DownAt(k.Ctx)
	}
	if err == nil && (at.Before(start) || at.After(returned)) {
		err = fmt.Errorf("the engine's exit time %s is not within the %s (%s to %s)",
			at.Format(time.RFC3339Nano), verb, start.Format(time.RFC3339Nano), returned.Format(time.RFC3339Nano))
	}
	if err != nil {
		return start, fmt.Sprintf("the %s began (the %s took %s; %s's exit time unreadable: %v)", verb, verb, returned.Sub(start), backend, err)
	}
	return at, fmt.Sprintf("%s went down (the engine's exit time, %s into the %s, which took %s)", backend, at.Sub(start), verb, returned.Sub(start))
}

// eachFaulty runs a verb on beta and gamma in parallel, ending the
// scenario when it fails.
func eachFaulty(k *kit.Kit, action string, fn func(context.Context, containers.Faulter) error) {
	errs := make(chan error, len(containerFaulty))
	for _, b := range containerFaulty {
		go func() {
			errs <- containerAct(k.Env, b, action, func(f containers.Faulter) error { return fn(k.Ctx, f) })
		}()
	}
	for range containerFaulty {
		k.HarnessMust(<-errs, "%s", action) // the engine's error, not the gateway's: inconclusive
	}
}

// undoEachFaulty runs an undo verb on beta and gamma unless done (for a
// defer: a scenario ended early leaves no container frozen or off the
// network).
func undoEachFaulty(k *kit.Kit, done *bool, action string, fn func(context.Context, containers.Faulter) error) {
	if *done {
		return
	}
	for _, b := range containerFaulty {
		_ = containerAct(k.Env, b, action, func(f containers.Faulter) error { return fn(context.WithoutCancel(k.Ctx), f) })
	}
}

// landed is a call and when it returned.
type landed struct {
	call *history.Call
	at   time.Time
}

// inFlight starts a slow call to each faulty backend (a latency fault
// holds it at the backend) and returns their channels once they are in
// flight (ending the scenario when one is not: the fault would then find
// no call to cut).
func inFlight(k *kit.Kit, c *history.Client) map[string]<-chan landed {
	out := map[string]<-chan landed{}
	for _, b := range containerFaulty {
		k.SetFaults(b, k.OnTool(b, "slow", faults.Fault{Kind: faults.KindLatency, Params: &faults.Latency{Delay: fakebackends.Duration(20 * time.Second)}}))
		ch := make(chan landed, 1)
		slow := k.Tool(b, "slow")
		go func() {
			call := c.CallTool(k.Ctx, slow, nil)
			ch <- landed{call, time.Now()}
		}()
		out[b] = ch
	}
	kit.Sleep(k.Ctx, 500*time.Millisecond)
	for b, ch := range out {
		k.G.Expect(ch).To(gomega.BeEmpty(), "the slow call to %s is in flight before the fault", b)
	}
	return out
}

// checkAnswers judges that each of backends answers c (phase names the
// moment, e.g. "before the kill").
func checkAnswers(k *kit.Kit, c *history.Client, phase string, backends ...string) {
	for _, b := range backends {
		k.CheckOK(fmt.Sprintf("%s: %s answers", phase, b), c.CallTool(k.Ctx, k.Tool(b, "echo"), echoArgs(phase)))
	}
}

// checkAtTimeout judges that call failed naming backend by the gateway's
// call timeout (plus slack for a loaded machine): the gateway bounded a
// call the backend never answers.
func checkAtTimeout(k *kit.Kit, name string, call *history.Call, backend, figure string) {
	k.TimeToError(figure, call, call.Took())
	k.CheckCallWithin(name, nil, call, ContainerCallBound, "", matchers.BeBackendUnavailable(backend))
}

// checkRecovered judges, for alpha and each faulty backend, at most one
// failed call after the undo (after names it), then full service: three
// calls in a row succeed.
func checkRecovered(k *kit.Kit, c *history.Client, after, who string) {
	for _, b := range append([]string{alpha}, containerFaulty...) {
		name := k.Tool(b, "echo")
		k.Check(fmt.Sprintf("after %s at most one failed call to %s%s, then full service", after, b, who), func(ck *kit.C) {
			failed, last := callsUntilOK(k.Ctx, c, name, containerRecoveryCalls)
			k.Recorder().MaxFigure("failed_calls_after_"+strings.ReplaceAll(after, " ", "_"), float64(len(failed)))
			ck.Expect(last.Outcome).To(gomega.Equal(history.OutcomeOK), "%s never succeeded in %d calls: %s", name, containerRecoveryCalls, last.Text())
			for i := range 3 {
				call := c.CallTool(k.Ctx, name, echoArgs(fmt.Sprintf("%s %d", after, i)))
				ck.Expect(call).To(matchers.HaveOutcome(history.OutcomeOK), "call %d of 3 after the first success", i+1)
			}
			// Judged last: too many failures first, but within the
			// allowance once those the machine ran out (StalledThrough)
			// are set aside, is no verdict.
			if why := k.StalledEach(failed); len(failed) > 1 && len(failed)-len(why) <= 1 {
				ck.Excuse("%d of the %d failed calls to %s came while the machine ran nothing: %s", len(why), len(failed), b, strings.Join(why, "; "))
			}
			ck.Expect(len(failed)).To(gomega.BeNumerically("<=", 1), "failed calls to %s after %s", b, after)
		})
	}
}

// callsUntilOK calls name until it succeeds (at most max calls) and
// returns the calls that failed first, and the last call.
func callsUntilOK(ctx context.Context, c *history.Client, name string, max int) ([]*history.Call, *history.Call) {
	var failed []*history.Call
	var last *history.Call
	for range max {
		last = c.CallTool(ctx, name, echoArgs("probe"))
		if last.Outcome == history.OutcomeOK {
			break
		}
		failed = append(failed, last)
	}
	return failed, last
}

// runContainerKillStop: SIGKILL and start, then a graceful stop and
// start, in one topology.
func runContainerKillStop(k *kit.Kit, rev history.Revision) {
	c := k.Client(rev)
	containerDown(k, c, "kill", func(ctx context.Context, f containers.Faulter) error { return f.Kill(ctx) })
	containerDown(k, c, "stop", func(ctx context.Context, f containers.Faulter) error { return f.Stop(ctx) })
}

// containerDown takes beta and gamma down with verb (kill or stop) while a
// call to each is in flight, judges the calls in flight and the next
// ones, and starts them again.
func containerDown(k *kit.Kit, c *history.Client, verb string, fn func(context.Context, containers.Faulter) error) {
	checkAnswers(k, c, "before the "+verb, append([]string{alpha}, containerFaulty...)...)
	flying := inFlight(k, c)
	start := time.Now()
	eachFaulty(k, "container-"+verb, fn)
	returned := time.Now()
	for _, b := range containerFaulty {
		// The calls in flight end within containerFailFast of their
		// container going down (see wentDown).
		down, what := wentDown(k, b, verb, start, returned)
		l, _ := kit.Await(k.Ctx, flying[b], containerClientTimeout+time.Second)
		k.Check(fmt.Sprintf("after %s the call in flight fails naming %s within %s", verb, b, containerFailFast), func(ck *kit.C) {
			ck.Expect(l.call).NotTo(gomega.BeNil(), "the call in flight to %s returned", b)
			ck.Evidence(l.call)
			since := max(l.at.Sub(down), 0)
			k.TimeToError("time_to_error_ms.in_flight", l.call, since)
			if early := down.Sub(l.at); early > 0 { // the socket closed as the process died, before the engine recorded it
				ck.Observed("%s %s before %s", l.call.Outcome, early, what)
			} else {
				ck.Observed("%s %s after %s", l.call.Outcome, since, what)
			}
			ck.Expect(l.call).To(matchers.BeBackendUnavailable(b))
			ck.TookWithin(c, fmt.Sprintf("the end of the call in flight to %s", b), down, since, containerFailFast)
		})
	}
	for _, b := range containerFaulty {
		next := c.CallTool(k.Ctx, k.Tool(b, "echo"), echoArgs("down"))
		k.TimeToError("time_to_error_ms.next_call", next, next.Took())
		k.CheckCallWithin(fmt.Sprintf("after %s the next call fails naming %s within %s", verb, b, containerFailFast), c, next, containerFailFast, "",
			matchers.BeBackendUnavailable(b))
	}
	k.CheckOK(fmt.Sprintf("after %s alpha answers while beta and gamma are down", verb), c.CallTool(k.Ctx, k.Tool(alpha, "echo"), echoArgs("bystander")))
	eachFaulty(k, "container-start", func(ctx context.Context, f containers.Faulter) error { return f.StartAgain(ctx) })
	checkRecovered(k, c, "start after "+verb, "")
}

func runContainerFreeze(k *kit.Kit, rev history.Revision) {
	c := k.Client(rev)
	checkAnswers(k, c, "before the freeze", containerFaulty...)
	resume := func(ctx context.Context, f containers.Faulter) error { return f.Resume(ctx) }
	eachFaulty(k, "container-pause", func(ctx context.Context, f containers.Faulter) error { return f.Pause(ctx) })
	resumed := false
	defer undoEachFaulty(k, &resumed, "container-unpause", resume)
	for _, b := range containerFaulty {
		call := c.CallTool(k.Ctx, k.Tool(b, "echo"), echoArgs("frozen"))
		checkAtTimeout(k, fmt.Sprintf("frozen backend's call ends at the call timeout naming %s", b), call, b, "time_to_error_ms.frozen")
	}
	k.CheckOK("alpha answers while beta and gamma are frozen", c.CallTool(k.Ctx, k.Tool(alpha, "echo"), echoArgs("bystander")))
	eachFaulty(k, "container-unpause", resume)
	resumed = true
	checkRecovered(k, c, "unpause", "")
}

// runContainerPartition: a partition undone on the same addresses, then
// one undone on new addresses, in one topology (the same two clients).
func runContainerPartition(k *kit.Kit, rev history.Revision) {
	active, idle := k.Client(rev), k.Client(rev)
	partition(k, active, idle, false)
	partition(k, active, idle, true)
}

func partition(k *kit.Kit, active, idle *history.Client, newIP bool) {
	ctx := k.Ctx
	phase, undo, after := "partition", "network-reconnect", "reconnect"
	reconnect := func(ctx context.Context, f containers.Faulter) error { return f.Reconnect(ctx) }
	if newIP {
		phase, undo, after = "re-address", "network-reconnect-new-ip", "reconnect on a new address"
		reconnect = func(ctx context.Context, f containers.Faulter) error { return f.ReconnectNewIP(ctx) }
	}
	checkAnswers(k, active, "before the "+phase, containerFaulty...)
	checkAnswers(k, idle, "before the "+phase+" (idle client)", containerFaulty...)
	eachFaulty(k, "network-disconnect", func(ctx context.Context, f containers.Faulter) error { return f.Disconnect(ctx) })
	undone := false
	defer undoEachFaulty(k, &undone, undo, reconnect)
	if !newIP {
		for _, b := range containerFaulty {
			call := active.CallTool(ctx, k.Tool(b, "echo"), echoArgs("partitioned"))
			checkAtTimeout(k, fmt.Sprintf("partition: a call to %s ends at the call timeout naming %s", b, b), call, b, "time_to_error_ms.partitioned")
		}
		// The idle client's backend connections sat idle through the
		// partition (keep-alive): its calls are bounded too.
		for _, b := range containerFaulty {
			call := idle.CallTool(ctx, k.Tool(b, "echo"), echoArgs("idle"))
			checkAtTimeout(k, fmt.Sprintf("partition: idle keep-alive call to %s bounded by call timeout", b), call, b, "time_to_error_ms.partitioned_idle")
		}
		k.CheckOK("partition: alpha answers during the partition", active.CallTool(ctx, k.Tool(alpha, "echo"), echoArgs("bystander")))
	}
	eachFaulty(k, undo, reconnect)
	undone = true
	checkRecovered(k, active, after, "")
	checkRecovered(k, idle, after, " (idle client)")
}

func runContainerGatewayRestart(k *kit.Kit, rev history.Revision) {
	c := k.Client(rev)
	checkAnswers(k, c, "before the gateway restart", append([]string{alpha}, containerFaulty...)...)
	// Restart waits for the gateway's readiness: a gateway that does not
	// come back fails the scenario (not the harness's part alone).
	restarted := containerAct(k.Env, "gateway", "gateway-restart", func(f containers.Faulter) error {
		r, ok := f.(interface{ Restart(context.Context) error })
		if !ok {
			return runtimes.ErrNotSupported
		}
		return r.Restart(k.Ctx)
	})
	k.G.Expect(restarted).To(gomega.Succeed(), "restart the gateway container: %v", restarted)
	// The old client: a clean error (the gateway answered or refused), at
	// once, never a hang; a stateless client may simply go on.
	old := c.CallTool(k.Ctx, k.Tool(beta, "echo"), echoArgs("after restart"))
	k.TimeToError("time_to_error_ms.old_session", old, old.Took())
	k.Check(fmt.Sprintf("after gateway restart the old session's call ends within %s, no hang", containerFailFast), func(ck *kit.C) {
		ck.Evidence(old)
		ck.Expect(old.Outcome).NotTo(gomega.Equal(history.OutcomeTimeout), "the old session's call after the gateway restart: %s", old.Text())
		ck.ReturnsWithin(nil, old, containerFailFast, "")
	})
	if rev == history.RevisionLegacy {
		k.Check("after gateway restart the old legacy session gets a clean error", func(ck *kit.C) {
			ck.Evidence(old)
			ck.Expect(old.Outcome).To(gomega.BeElementOf(history.OutcomeError, history.OutcomeBackendUnavailable, history.OutcomeToolError),
				"the old legacy session is gone after the gateway restart: %s %s", old.Outcome, old.Text())
		})
	}
	k.Check("after gateway restart a new session works", func(ck *kit.C) {
		fresh, err := k.Env.Client(k.Ctx, rev)
		ck.Expect(err).NotTo(gomega.HaveOccurred(), "connect a new %s session", rev)
		for _, b := range append([]string{alpha}, containerFaulty...) {
			ck.Expect(fresh.CallTool(k.Ctx, k.Tool(b, "echo"), echoArgs("new session"))).To(matchers.HaveOutcome(history.OutcomeOK), "%s in a new session", b)
		}
	})
}
