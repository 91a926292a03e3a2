package scenarios

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
)

// Health scenario settings: the health monitor the topology asks for.
const (
	healthInterval  = 250 * time.Millisecond
	healthTimeout   = 200 * time.Millisecond
	healthThreshold = 2
	// healthSample is the pause between two reads of the health API.
	healthSample = 50 * time.Millisecond
)

// The health scenario's checks ("the health API tells the truth").
const (
	healthDownCheck = "health API: beta is not reported serving while it is down"
	healthBackCheck = "health API: beta is reported serving again once it is back"
)

// healthScenarios: the health API tells the truth (issue 41). Beta's
// listener is closed (every connection refused, which the scenario
// proves by dialing beta's address itself) and the health API is read
// every 50 ms: it must stop reporting beta serving within the window
// (healthWindow: the health monitor's interval × threshold + timeout,
// twice, plus the gateway's declared recovery window). Once beta listens
// again and answers through the gateway, the API must report it serving
// again within the same window.
func healthScenarios() []Scenario {
	return variants("health", []Variant{{history.RevisionLegacy, fakebackends.TransportStreamableHTTP}}, func(v Variant) Scenario {
		return Scenario{
			Description: "the health API tells the truth: a backend whose listener is closed (connection refused, proven by dialing it) is not reported healthy " +
				"past the health interval and the gateway's recovery window; once it serves again it is reported healthy again within the same window",
			Labels:   []string{LabelHealth},
			Needs:    []targets.Capability{targets.CapHealthAPI},
			Timeout:  40 * time.Second,
			Topology: healthTopology(v),
			Run:      func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runHealth(ctx, env, g, v) },
		}
	})
}

// healthTopology is two backends behind a gateway whose health monitor
// probes every healthInterval, its states polled into the timeline.
func healthTopology(v Variant) func() harness.Topology {
	return twoBackendsTopology(v, 2*time.Second, 10*time.Second, func(t *harness.Topology) {
		t.PollHealth = 25 * time.Millisecond
		t.Features = runtimes.Features{Health: &runtimes.HealthFeature{Interval: healthInterval, Timeout: healthTimeout, UnhealthyThreshold: healthThreshold}}
	})
}

// healthWindow is how long the health API may take to follow beta's real
// state: generous, twice the monitor's worst case (threshold probes, each
// up to its timeout) plus the gateway's declared recovery window.
func healthWindow(k *kit.Kit) time.Duration {
	return k.Recovery() + 2*(healthThreshold*healthInterval+healthTimeout)
}

// healthSampleOf is one read of the health API: beta's state in our
// words (the profile's healthAPI mapping), or the read's error.
type healthSampleOf struct {
	at    time.Duration // since the fault step began
	state string
	err   error
}

func (s healthSampleOf) String() string {
	if s.err != nil {
		return fmt.Sprintf("%s: error", s.at.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s: %q", s.at.Round(time.Millisecond), s.state)
}

// healthWatch reads the health API every healthSample until want(beta's
// state) holds or window passes, calling beta's echo through c once a
// second meanwhile (a gateway that learns health from traffic learns
// it). It returns the sample that held (ok), every sample, and the calls.
func healthWatch(k *kit.Kit, c *history.Client, betaEcho string, window time.Duration, want func(string) bool) (held healthSampleOf, ok bool, samples []healthSampleOf, calls []*history.Call) {
	start := time.Now()
	var lastCall time.Time
	for {
		if time.Since(lastCall) >= time.Second {
			lastCall = time.Now()
			calls = append(calls, c.CallTool(k.Ctx, betaEcho, echoArgs("health")))
		}
		ctx, cancel := context.WithTimeout(k.Ctx, runtimes.DefaultControlTimeout)
		states, err := k.Env.HealthStates(ctx)
		cancel()
		s := healthSampleOf{at: time.Since(start), err: err}
		if err == nil {
			s.state = states[beta].State
		}
		samples = append(samples, s)
		if err == nil && want(s.state) {
			return s, true, samples, calls
		}
		if time.Since(start) >= window || k.Ctx.Err() != nil {
			return s, false, samples, calls
		}
		sleep(k.Ctx, healthSample)
	}
}

// describeSamples is the samples in words: the states seen, in order,
// each with when it was first seen, and how many reads failed.
func describeSamples(samples []healthSampleOf) string {
	var parts []string
	failed, last := 0, "\x00"
	for _, s := range samples {
		if s.err != nil {
			failed++
			continue
		}
		if s.state != last {
			parts = append(parts, s.String())
			last = s.state
		}
	}
	out := fmt.Sprintf("%d reads, beta's state %s", len(samples), strings.Join(parts, " → "))
	if failed > 0 {
		out += fmt.Sprintf(" (%d reads failed)", failed)
	}
	return out
}

// unread says why the samples show nothing of the API's view ("" when a
// read succeeded): every read failed, the last error quoted.
func unread(samples []healthSampleOf) string {
	var last error
	for _, s := range samples {
		if s.err == nil {
			return ""
		}
		last = s.err
	}
	return fmt.Sprintf("the health API answered none of %d reads: %v", len(samples), last)
}

// lastRead is the last sample whose read succeeded (zero when none did).
func lastRead(samples []healthSampleOf) healthSampleOf {
	for i := len(samples) - 1; i >= 0; i-- {
		if samples[i].err == nil {
			return samples[i]
		}
	}
	return healthSampleOf{}
}

// usableHealth: states in our words that say a backend serves.
func usableHealth(state string) bool { return state == "healthy" || state == "degraded" }

// downHealth: states in our words that say a backend does not serve (or
// is not known to).
func downHealth(state string) bool {
	return state == "" || state == "unhealthy" || state == "unknown" || state == "unauthenticated"
}

// dialRefused returns "" when backend's own address refuses a TCP
// connection (its listener is closed: the backend is down), else why
// not: the fault did not hold.
func dialRefused(ctx context.Context, env *harness.Env, backend string) string {
	b := env.Backend(backend)
	if b == nil || b.URL() == "" {
		return "cannot tell whether " + backend + " is down: it has no address"
	}
	u, err := url.Parse(b.URL())
	if err != nil || u.Host == "" {
		return fmt.Sprintf("cannot tell whether %s is down: its URL %q", backend, b.URL())
	}
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	switch {
	case err == nil:
		_ = conn.Close()
		return fmt.Sprintf("%s's address %s accepted a connection: the backend was not down", backend, u.Host)
	case errors.Is(err, syscall.ECONNREFUSED):
		return ""
	default:
		return fmt.Sprintf("cannot tell whether %s is down: dialing %s: %v", backend, u.Host, err)
	}
}

func runHealth(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	k := kit.New(ctx, env, g)
	c := k.Client(v.Revision)
	betaEcho := k.Tool(beta, "echo")
	k.CheckServes("beta answers before any fault", c, c.CallTool(ctx, betaEcho, echoArgs("before")))
	window := healthWindow(k)

	// What the API says of a serving beta: once it says healthy (or
	// degraded), or its last word within the window. A word of its own
	// ("running") that it also says of a dead beta is judged by
	// behaviour: the same word for both states does not tell them apart.
	base, _, _, _ := healthWatch(k, c, betaEcho, window, usableHealth)
	baseline := base.state
	serving := func(state string) bool { return usableHealth(state) || !downHealth(baseline) && state == baseline }
	k.Note("health API before the fault: beta %q (the API's word for a serving beta)", baseline)

	// Beta's listener closes: every connection refused until cleared.
	c = k.Steady(c, "beta down")
	k.SetFaults(beta, faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashDown}})
	heldAtStart := dialRefused(ctx, env, beta)
	held, ok, samples, calls := healthWatch(k, c, betaEcho, window, func(s string) bool { return !serving(s) })
	premise := heldAtStart
	if !ok { // judged failed only if beta was still down at the end, and the API was read
		premise = cmp.Or(premise, dialRefused(ctx, env, beta), unread(samples))
	}
	if ok {
		k.Figure("health_not_serving_after_ms", ms(held.at))
	}
	// The evidence is the API's reads (the calls of beta made meanwhile
	// are in the timeline): a finding's first evidence quotes them.
	k.CheckPremise(healthDownCheck, premise, nil, func(ck *kit.C) {
		ck.Expected("within %s of beta's listener closing (the health monitor's %s interval × %d + %s timeout, twice, plus the recovery window %s), the health API stops reporting beta as it reports a serving beta (%q, or healthy/degraded)",
			window, healthInterval, healthThreshold, healthTimeout, k.Recovery(), baseline)
		ck.Observed("beta's address refused connections (%d calls of beta's echo meanwhile, %d failed); %s", len(calls), failedCalls(calls), describeSamples(samples))
		last := lastRead(samples)
		ck.Expect(ok).To(gomega.BeTrue(), "the health API still reported beta %q %s after beta went down (connection refused throughout)", last.state, last.at.Round(time.Millisecond))
	})

	// Beta listens again: once it answers through the gateway, the API
	// must say so.
	k.ClearFaults(beta)
	held, ok, samples, calls = healthWatch(k, c, betaEcho, window, serving)
	if !ok { // one more call: beta serves now, or the gateway never took it back
		calls = append(calls, c.CallTool(ctx, betaEcho, echoArgs("back")))
	}
	var answered *history.Call
	for _, call := range calls {
		if call.Outcome == history.OutcomeOK {
			answered = call
			break
		}
	}
	backPremise := ""
	switch {
	case answered == nil:
		backPremise = fmt.Sprintf("beta never answered through the gateway within %s of listening again (%d calls): reporting it down may be the truth", window, len(calls))
	case !ok:
		backPremise = unread(samples)
	}
	if ok {
		k.Figure("health_serving_again_after_ms", ms(held.at))
	}
	k.CheckPremise(healthBackCheck, backPremise, answered, func(ck *kit.C) {
		ck.Expected("within %s of beta listening again, with beta answering through the gateway, the health API reports beta serving (%q, or healthy/degraded)", window, baseline)
		ck.Observed("beta answered through the gateway; %s", describeSamples(samples))
		last := lastRead(samples)
		ck.Expect(ok).To(gomega.BeTrue(), "the health API still reported beta %q %s after beta was back", last.state, last.at.Round(time.Millisecond))
	})
}

// failedCalls counts the calls that did not succeed.
func failedCalls(calls []*history.Call) int {
	n := 0
	for _, c := range calls {
		if c.Outcome != history.OutcomeOK {
			n++
		}
	}
	return n
}
