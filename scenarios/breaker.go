package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/matchers"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
)

// Breaker scenario settings.
const (
	breakerThreshold   = 3
	breakerOpenTimeout = time.Second
	breakerCallTimeout = 5 * time.Second // no call here waits for it (500s, refusals)
	breakerOpenCalls   = 5               // calls made while the circuit is open
)

// breakerScenarios: scenario 3, breaker recovery.
func breakerScenarios() []Scenario {
	return variants("breaker", []Variant{
		{history.RevisionLegacy, fakebackends.TransportStreamableHTTP},
		{history.RevisionModern, fakebackends.TransportSSE},
	}, func(v Variant) Scenario {
		return Scenario{
			Description: "consecutive failures open beta's circuit; while open, calls fail fast without reaching beta; once beta is back the circuit goes " +
				"half-open then closed and beta's tools work; the metrics' transition counters match the transitions seen",
			Labels:      []string{LabelBreaker},
			Needs:       []targets.Capability{targets.CapBreaker},
			Conditional: append(slices.Clone(breakerHealthChecks), breakerMetricsCheck),
			Timeout:     30 * time.Second,
			Topology: twoBackendsTopology(v, breakerCallTimeout, 10*time.Second, func(t *harness.Topology) {
				t.PollHealth = 20 * time.Millisecond
				t.Features = runtimes.Features{Breaker: &runtimes.BreakerFeature{FailureThreshold: breakerThreshold, OpenTimeout: breakerOpenTimeout}, Metrics: true}
			}),
			Run: func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runBreaker(ctx, env, g, v) },
		}
	})
}

// The breaker scenario's checks that need metrics, and those that read
// the circuit's state from the health API. Without the health API the
// breaker is judged by its behaviour alone: it opens (calls stop reaching
// beta), fails fast naming beta, and lets beta back in after the open
// timeout.
var (
	breakerMetricsCheck = ConditionalCheck{Name: "metrics: circuit transition counters match the transitions", Needs: []targets.Capability{targets.CapMetrics}}
	breakerHealthChecks = []ConditionalCheck{
		{Name: "health API: beta's circuit is closed at the start", Needs: []targets.Capability{targets.CapHealthAPI}},
		{Name: "health API: the circuit goes half-open after the open timeout", Needs: []targets.Capability{targets.CapHealthAPI}},
		{Name: "health API: the circuit closes after a successful trial", Needs: []targets.Capability{targets.CapHealthAPI}},
		{Name: "health API: the poller saw closed, open, (half-open,) closed", Needs: []targets.Capability{targets.CapHealthAPI}},
	}
)

func runBreaker(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	k := kit.New(ctx, env, g)
	rec := env.Recorder()
	c := k.Client(v.Revision)
	betaEcho := k.Tool(beta, "echo")
	k.CheckServes("beta answers before any fault", c, c.CallTool(ctx, betaEcho, echoArgs("before")))
	health := k.Has(targets.CapHealthAPI)
	breakerHealthChecks[0].Judge(k, func(ck *kit.C) {
		ck.Expect(healthOf(ctx, env, beta).Breaker).To(gomega.Equal("closed"), "beta's circuit at the start")
	})

	// Consecutive failures open the circuit.
	c = k.Steady(c, "the failing calls")
	k.SetFaults(beta, onCall(faults.Fault{Kind: faults.KindHTTPStatus, Params: &faults.HTTPStatus{Status: 500}}))
	failStart := time.Now()
	var fed []string
	var lastFailStart time.Time
	for i := range breakerThreshold {
		lastFailStart = time.Now()
		call := c.CallTool(ctx, betaEcho, echoArgs("fail"))
		k.CheckCall(fmt.Sprintf("failing call %d names beta", i+1), call, matchers.BeBackendUnavailable(beta))
		if why := k.FaultActed(beta, call); why != "" {
			fed = append(fed, fmt.Sprintf("call %d: %s", i+1, why))
		}
	}
	// What follows judges the breaker fed breakerThreshold consecutive
	// failures of beta: when some of those calls never reached beta (the
	// gateway answered them itself), the breaker was not fed, and its
	// checks are inconclusive.
	if len(fed) > 0 {
		k.Assume(fmt.Sprintf("the breaker was not fed %d consecutive failures of beta: %s", breakerThreshold, strings.Join(fed, "; ")))
	}
	// The circuit opens: the health API says so (when there is one), and
	// calls stop reaching beta.
	opened := !health || kit.Until(ctx, 2*time.Second, func() bool { return healthOf(ctx, env, beta).Breaker == "open" })
	if health && opened { // a figure only from an observed transition
		rec.SetFigure("time_to_open_ms", ms(time.Since(failStart)))
	}
	// The health poller records each state the waits here saw: it samples
	// in the background, and on a loaded machine it missed the open
	// window (its path was [closed closed]).
	pollNow := func() {
		if p := env.HealthPoller(); p != nil {
			_, _ = p.Poll(ctx)
		}
	}
	if opened {
		pollNow()
	}
	state := "(no health API)"
	if health {
		state = healthOf(ctx, env, beta).Breaker
	}

	// While open: calls fail at once, naming beta, and never reach it.
	// The circuit opened no earlier than the last failing call started,
	// so it is surely open until that start plus the open timeout: a
	// request reaching beta before then went through an open circuit;
	// one after may be the half-open trial (a loaded machine can make the
	// calls outlast the window).
	openUntil := lastFailStart.Add(breakerOpenTimeout)
	before, err := k.CountRequests(beta, "tools/call")
	k.Must(err, "read beta's request log")
	var open []*history.Call
	openCallsStart := time.Now()
	for range breakerOpenCalls {
		open = append(open, c.CallTool(ctx, betaEcho, echoArgs("while open")))
	}
	reached, trials := reachedWhileOpen(k, before, openUntil)
	after := before + reached + trials
	// Calls that all started once the circuit may have gone half-open
	// cannot show it was open.
	late := ""
	if reached == 0 && trials > 0 && openCallsStart.After(openUntil) {
		late = fmt.Sprintf("the calls meant for the open circuit all started after its open timeout had passed (%s after the last failing call began): the machine was too slow to judge them", openCallsStart.Sub(lastFailStart).Round(time.Millisecond))
	}
	opens := fmt.Sprintf("the circuit opens after %d failed calls", breakerThreshold)
	// The checks of an open, then half-open, circuit mean something only
	// once the circuit was seen open: the health API said so, or calls
	// stopped reaching beta. A gateway that declares a breaker which never
	// opens fails "opens" (its promise), and those checks are inconclusive
	// (a call that succeeds after the fault is cleared is no half-open
	// trial when nothing was ever open).
	openWhy := ""
	// (Calls that all came after the open timeout still show it: an open
	// circuit lets one trial through per open timeout, a closed one every
	// call; reachedWhileOpen tells them apart however late they came.)
	if seenOpen := (health && opened) || (reached == 0 && len(open) > 1); !seenOpen {
		openWhy = fmt.Sprintf("beta's circuit was never seen open (health API state %q; %d of the %d calls after the failures reached beta within the open timeout)", state, reached, breakerOpenCalls)
	}
	if late != "" && opened {
		k.Inconclusive(opens, late, open...)
	} else {
		k.Check(opens, func(ck *kit.C) {
			ck.Observed("health API circuit state %q; %d of the %d calls that followed reached beta within the open timeout (%d after it)", state, reached, breakerOpenCalls, trials)
			ck.Expect(opened).To(gomega.BeTrue(), "beta's circuit opens after %d consecutive failures (health API state %q)", breakerThreshold, state)
			if late == "" {
				ck.Expect(reached).To(gomega.BeZero(), "calls after %d consecutive failures still reach beta", breakerThreshold)
			}
		})
	}
	endOpen := k.Given(openWhy)
	k.Check("while open, calls fail fast naming beta", func(ck *kit.C) {
		ck.Evidence(open...)
		for i, call := range open {
			ck.Expect(call).To(matchers.BeBackendUnavailable(beta), "call %d while the circuit is open", i+1)
			// Well under the gateway's call timeout: refused before the
			// network, not waited for (under load, more than 1 s); the
			// figure is reported.
			ck.FailsWithin(c, call, breakerCallTimeout/2, "open_fail_fast_max_ms")
		}
	})
	if late != "" {
		k.Inconclusive("while open, calls do not reach beta", late, open...)
	} else {
		k.Check("while open, calls do not reach beta", func(ck *kit.C) {
			ck.Evidence(open...)
			ck.Observed("beta's tools/call count %d before the calls, %d after (%d of them after the open timeout had passed)", before, after, trials)
			ck.Expect(reached).To(gomega.BeZero(), "calls made while the circuit is open reached beta")
		})
	}
	endOpen()
	k.CheckOK("alpha unaffected while beta's circuit is open", c.CallTool(ctx, k.Tool(alpha, "echo"), echoArgs("bystander")))

	// Beta comes back: after the open timeout the circuit is half-open, a
	// trial call goes through and closes it.
	k.ClearFaults(beta)
	recovered := time.Now()
	if !health {
		sleep(ctx, breakerOpenTimeout+200*time.Millisecond) // nothing to watch: wait the open timeout out
	}
	endOpen = k.Given(openWhy)
	breakerHealthChecks[1].Judge(k, func(ck *kit.C) {
		halfOpen := kit.Until(ctx, breakerOpenTimeout+2*time.Second, func() bool { return healthOf(ctx, env, beta).Breaker == "half-open" })
		if halfOpen {
			rec.SetFigure("time_to_half_open_ms", ms(time.Since(recovered)))
			pollNow()
		}
		ck.Expect(halfOpen).To(gomega.BeTrue(), "beta's circuit goes half-open after the open timeout (state %q)", healthOf(ctx, env, beta).Breaker)
	})
	k.CheckOK("the trial call in half-open succeeds", c.CallTool(ctx, betaEcho, echoArgs("trial")))
	breakerHealthChecks[2].Judge(k, func(ck *kit.C) {
		closed := kit.Until(ctx, 2*time.Second, func() bool { return healthOf(ctx, env, beta).Breaker == "closed" })
		if closed {
			rec.SetFigure("time_to_close_ms", ms(time.Since(recovered)))
		}
		ck.Expect(closed).To(gomega.BeTrue(), "beta's circuit closes after a successful trial (state %q)", healthOf(ctx, env, beta).Breaker)
	})
	endOpen()
	k.Check("beta's tools and resources work after its circuit closed", func(ck *kit.C) {
		for range 3 {
			ck.Expect(c.CallTool(ctx, betaEcho, echoArgs("closed again"))).To(matchers.HaveOutcome(history.OutcomeOK))
		}
		ck.Expect(c.ReadResource(ctx, k.Resource(beta, readme(beta)))).To(matchers.HaveOutcome(history.OutcomeOK))
	})

	// The waits above saw closed, open, half-open and closed in turn, and
	// the poller recorded each (pollNow); its background samples in
	// between must follow the same path. Its first sample counts too (it
	// may come after the start, which the first check saw closed).
	pollNow()
	var path []string
	for _, tr := range rec.Transitions() {
		if tr.Backend == beta && tr.Aspect == "breaker" && tr.To != "" && (len(path) == 0 || path[len(path)-1] != tr.To) {
			path = append(path, tr.To)
		}
	}
	if len(path) == 0 || path[0] != "closed" {
		path = append([]string{"closed"}, path...)
	}
	// Each failed half-open trial (a call meant for the open circuit that
	// reached beta after the open timeout, fault still set) opened the
	// circuit again: up to trials "half-open, open" steps are its due.
	endOpen = k.Given(openWhy)
	defer endOpen()
	breakerHealthChecks[3].Judge(k, func(ck *kit.C) {
		rest, reopened := withoutReopens(path, trials)
		ck.Observed("%v%s", path, reopenNote(reopened, trials))
		ck.Expect(isSubsequence(rest, []string{"closed", "open", "half-open", "closed"})).To(gomega.BeTrue(),
			"beta's circuit states seen by the health poller %v do not follow closed, open, half-open, closed (%d failed half-open trials reached beta)", path, trials)
		ck.Expect(path).To(gomega.ContainElement("open"), "the health poller saw beta's circuit open")
	})

	// The metrics counters match them, exactly.
	breakerMetricsCheck.Judge(k, func(ck *kit.C) {
		m, err := kit.ScrapeTargetMetrics(ctx, env)
		ck.Expect(err).NotTo(gomega.HaveOccurred(), "scrape /metrics")
		const name = "vmcp_circuit_breaker_transitions_total"
		ck.Expect(m.Has(name)).To(gomega.BeTrue(), "%s is exported", name)
		count := func(from, to string) float64 {
			n := m.Sum(name, map[string]string{"backend_id": beta, "from": from, "to": to})
			rec.SetFigure("metric_transitions."+from+"_to_"+to, n)
			return n
		}
		// A failed half-open trial reopens the circuit: as many reopens
		// as the trials beta's log shows at most, each with its own
		// open → half-open.
		reopens := count("half-open", "open")
		ck.Observed("beta's transitions: %v reopens after a failed trial, %d failed trials reached beta", reopens, trials)
		ck.Expect(reopens).To(gomega.BeNumerically("<=", float64(trials)), "%s{backend_id=beta,from=half-open,to=open}: reopens beyond the failed trials beta saw", name)
		for _, tr := range []struct {
			from, to string
			want     float64
		}{{"closed", "open", 1}, {"open", "half-open", 1 + reopens}, {"half-open", "closed", 1}} {
			ck.Expect(count(tr.from, tr.to)).To(gomega.Equal(tr.want), "%s{backend_id=beta,from=%s,to=%s}", name, tr.from, tr.to)
		}
		ck.Expect(m.Sum(name, map[string]string{"backend_id": beta})).To(gomega.Equal(3.0+2*reopens), "beta's transitions in total")
		ck.Expect(m.Sum(name, map[string]string{"backend_id": alpha})).To(gomega.BeZero(), "alpha's circuit never moved")
		ck.Expect(m.Sum("vmcp_circuit_breaker_state", map[string]string{"backend_id": beta, "state": "closed"})).To(gomega.Equal(1.0), "beta's state gauge")
	})
}

// isSubsequence reports whether got appears in want in order (want may
// have more elements).
func isSubsequence(got, want []string) bool {
	i := 0
	for _, w := range want {
		if i < len(got) && got[i] == w {
			i++
		}
	}
	return i == len(got)
}

// withoutReopens drops up to n "half-open, open" steps from path (a
// failed half-open trial opens the circuit again) and says how many it
// dropped.
func withoutReopens(path []string, n int) (rest []string, dropped int) {
	for i := 0; i < len(path); i++ {
		if dropped < n && i+1 < len(path) && path[i] == "half-open" && path[i+1] == "open" {
			dropped++
			i++
			continue
		}
		rest = append(rest, path[i])
	}
	return rest, dropped
}

// reopenNote says how many reopens a failed trial explained.
func reopenNote(reopened, trials int) string {
	if reopened == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d reopened after a failed half-open trial; beta's log shows %d)", reopened, trials)
}

// reachedWhileOpen counts the tools/call requests beta logged after its
// first skip ones: those that went through an open circuit (before
// openUntil, or less than an open timeout after the previous half-open
// trial) and the half-open trials (at or after openUntil, spaced at least
// an open timeout apart).
func reachedWhileOpen(k *kit.Kit, skip int, openUntil time.Time) (reached, trials int) {
	reqs, err := k.Env.Backend(beta).Requests(k.Ctx)
	k.Must(err, "read beta's request log")
	n := 0
	var lastTrial time.Time
	for _, r := range reqs {
		if r.Method != "tools/call" {
			continue
		}
		if n++; n <= skip {
			continue
		}
		// A half-open circuit lets one trial through per open timeout:
		// beta still fails, so the trial opens it again, and the next one
		// comes an open timeout after that failure at the soonest, which
		// is after the trial reached beta. A request closer to the last
		// trial went through an open circuit, however slow the machine.
		switch {
		case r.Time.Before(openUntil):
			reached++
		case trials > 0 && r.Time.Sub(lastTrial) < breakerOpenTimeout:
			reached++
		default:
			trials++
			lastTrial = r.Time
		}
	}
	return reached, trials
}
