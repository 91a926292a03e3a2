package scenarios

import (
	"context"
	"slices"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
)

// Keepalive scenario settings.
const (
	kaInterval    = 300 * time.Millisecond
	kaJitter      = 30 * time.Millisecond
	kaTimeout     = 200 * time.Millisecond
	kaMaxFailures = 2
	kaProbeAfter  = 900 * time.Millisecond
	// kaSlack absorbs timer and scheduling delays on a loaded machine
	// above the jitter bound (a probe is never early, so the lower bound
	// has only clock granularity as slack).
	kaSlack = 250 * time.Millisecond
)

// keepaliveScenarios: scenario 6, keepalive. Keepalive probes backend
// sessions, which legacy client sessions own.
func keepaliveScenarios() []Scenario {
	return variants("keepalive", []Variant{
		{harness.RevisionLegacy, fakebackends.TransportStreamableHTTP},
		{harness.RevisionLegacy, fakebackends.TransportSSE},
	}, func(v Variant) Scenario {
		return Scenario{
			Description: "keepalive pings beta's session every interval ± jitter; after maxFailures failed probes it disables itself; " +
				"it probes again after probeAfter and re-enables; the metrics counters match the probes beta received, exactly",
			Labels:  []string{LabelKeepalive},
			Needs:   []harness.Capability{harness.CapKeepalive, harness.CapHealthAPI},
			Timeout: 30 * time.Second,
			Topology: func() harness.Topology {
				return harness.Topology{Backends: twoBackends(v), GatewayCallTimeout: 2 * time.Second,
					Features: harness.Features{Metrics: true, Keepalive: map[string]harness.KeepaliveFeature{
						beta: {Method: "ping", Interval: kaInterval, Jitter: kaJitter, Timeout: kaTimeout, MaxFailures: kaMaxFailures, ProbeAfter: kaProbeAfter},
					}},
					ClientOptions: []harness.ClientOption{harness.WithCallTimeout(10 * time.Second)}}
			},
			Run: func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runKeepalive(ctx, env, g, v) },
		}
	})
}

// pings returns the pings beta logged, in arrival order.
func pings(ctx context.Context, env *harness.Env, backend string) []fakebackends.RequestRecord {
	reqs, err := env.Backend(backend).Requests(ctx)
	if err != nil {
		return nil
	}
	var out []fakebackends.RequestRecord
	for _, r := range reqs {
		if r.Method == "ping" {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b fakebackends.RequestRecord) int { return a.Time.Compare(b.Time) })
	return out
}

func pingFailed(r fakebackends.RequestRecord) bool { return r.Fault != "" || r.Status >= 400 }

// keepaliveHealth reads the keepalive entry of a backend from the health
// API: enabled, consecutiveFailures, sessions.
func keepaliveHealth(ctx context.Context, env *harness.Env, backend string) (enabled bool, failures, sessions int, ok bool) {
	states, err := env.HealthStates(ctx)
	if err != nil {
		return false, 0, 0, false
	}
	ka, isMap := states[backend].Raw["keepalive"].(map[string]any)
	if !isMap {
		return false, 0, 0, false
	}
	enabled, _ = ka["enabled"].(bool)
	f, _ := ka["consecutiveFailures"].(float64)
	s, _ := ka["sessions"].(float64)
	return enabled, int(f), int(s), true
}

func runKeepalive(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	rec := env.Recorder()
	c := client(ctx, env, g, v.Revision)
	expectOK(g, c.CallTool(ctx, tool(beta, "echo"), echoArgs("hello")), "beta at the start")

	// Probes every interval ± jitter.
	const want = 6
	got := waitUntil(ctx, want*(kaInterval+kaJitter)+2*time.Second, func() bool { return len(pings(ctx, env, beta)) >= want })
	ps := pings(ctx, env, beta)
	g.Expect(got).To(gomega.BeTrue(), "beta received %d keepalive pings, want %d", len(ps), want)
	var gaps []time.Duration
	for i := 1; i < len(ps); i++ {
		gaps = append(gaps, ps[i].Time.Sub(ps[i-1].Time))
	}
	slices.Sort(gaps)
	rec.SetFigure("probe_interval_ms.min", ms(gaps[0]))
	rec.SetFigure("probe_interval_ms.median", ms(gaps[len(gaps)/2]))
	rec.SetFigure("probe_interval_ms.max", ms(gaps[len(gaps)-1]))
	g.Expect(gaps[0]).To(gomega.BeNumerically(">=", kaInterval-kaJitter-5*time.Millisecond), "no probe comes before interval − jitter (gaps %v)", gaps)
	g.Expect(gaps[len(gaps)/2]).To(gomega.BeNumerically("<=", kaInterval+kaJitter+50*time.Millisecond), "probes come every interval ± jitter (gaps %v)", gaps)
	g.Expect(gaps[len(gaps)-1]).To(gomega.BeNumerically("<=", kaInterval+kaJitter+kaSlack), "no probe comes much after interval + jitter (gaps %v)", gaps)
	for _, p := range ps {
		g.Expect(pingFailed(p)).To(gomega.BeFalse(), "a ping failed before any fault: %+v", p)
	}
	enabled, _, sessions, ok := keepaliveHealth(ctx, env, beta)
	g.Expect(ok).To(gomega.BeTrue(), "the health API reports beta's keepalive")
	g.Expect(enabled).To(gomega.BeTrue(), "beta's keepalive is enabled")
	g.Expect(sessions).To(gomega.Equal(1), "one session runs beta's keepalive")

	// Failing probes: after maxFailures it disables itself, and stops
	// probing.
	must(g, env.SetFaults(ctx, beta, fakebackends.Fault{Kind: fakebackends.KindHTTPStatus, Status: 500, Match: fakebackends.Match{Method: "ping"}}), "fail beta's pings")
	disabled := waitUntil(ctx, kaMaxFailures*(kaInterval+kaJitter+kaSlack)+time.Second, func() bool {
		en, _, _, ok := keepaliveHealth(ctx, env, beta)
		return ok && !en
	})
	g.Expect(disabled).To(gomega.BeTrue(), "beta's keepalive disables itself after %d failed probes", kaMaxFailures)
	_, failures, _, _ := keepaliveHealth(ctx, env, beta)
	g.Expect(failures).To(gomega.Equal(kaMaxFailures), "consecutive failures when it disabled itself")
	failedPings := func() []fakebackends.RequestRecord {
		var out []fakebackends.RequestRecord
		for _, p := range pings(ctx, env, beta) {
			if pingFailed(p) {
				out = append(out, p)
			}
		}
		return out
	}
	g.Expect(failedPings()).To(gomega.HaveLen(kaMaxFailures), "beta received exactly %d failed probes before keepalive disabled itself", kaMaxFailures)
	sleep(ctx, kaProbeAfter/2)
	g.Expect(failedPings()).To(gomega.HaveLen(kaMaxFailures), "no probe while keepalive is disabled (before probeAfter)")
	// Calls still work: keepalive failing is not the session failing.
	expectOK(g, c.CallTool(ctx, tool(beta, "echo"), echoArgs("while disabled")), "beta's tools while its keepalive is disabled")

	// Beta answers pings again: the re-probe after probeAfter re-enables.
	must(g, env.ClearFaults(ctx, beta), "clear beta")
	reenabled := waitUntil(ctx, kaProbeAfter+kaSlack+time.Second, func() bool {
		en, _, _, ok := keepaliveHealth(ctx, env, beta)
		return ok && en
	})
	g.Expect(reenabled).To(gomega.BeTrue(), "beta's keepalive re-enables after a successful re-probe")
	lastFailed := failedPings()[kaMaxFailures-1]
	var reprobe *fakebackends.RequestRecord
	for _, p := range pings(ctx, env, beta) {
		if p.Time.After(lastFailed.Time) {
			reprobe = &p
			break
		}
	}
	g.Expect(reprobe).NotTo(gomega.BeNil(), "the re-probe reached beta")
	gap := reprobe.Time.Sub(lastFailed.Time)
	rec.SetFigure("reprobe_after_ms", ms(gap))
	g.Expect(gap).To(gomega.BeNumerically(">=", kaProbeAfter-5*time.Millisecond), "the re-probe waits probeAfter after the last failure")
	g.Expect(gap).To(gomega.BeNumerically("<=", kaProbeAfter+kaSlack), "the re-probe comes about probeAfter after the last failure")
	n := len(pings(ctx, env, beta))
	resumed := waitUntil(ctx, 2*(kaInterval+kaJitter+kaSlack)+time.Second, func() bool { return len(pings(ctx, env, beta)) >= n+2 })
	g.Expect(resumed).To(gomega.BeTrue(), "probes resume at the interval after re-enabling")

	if !env.Capabilities().Has(harness.CapMetrics) {
		rec.SkipCheck("keepalive metrics counters: target %s lacks capability %s", env.Target().Name(), harness.CapMetrics)
		return
	}
	// The counters match the probes beta received, exactly. Read them at a
	// moment no probe is in flight: attempts = successes + failures, and
	// the same before and after reading beta's log.
	type counts struct{ attempts, successes, failures, pingFailed, disabled, alpha float64 }
	read := func() (counts, bool) {
		m, err := scrapeMetrics(ctx, env.Gateway().BaseURL())
		if err != nil {
			return counts{}, false
		}
		b := map[string]string{"backend_id": beta}
		return counts{
			attempts:   m.sum("vmcp_keepalive_attempt_total", b),
			successes:  m.sum("vmcp_keepalive_success_total", b),
			failures:   m.sum("vmcp_keepalive_failure_total", b),
			pingFailed: m.sum("vmcp_keepalive_failure_total", map[string]string{"backend_id": beta, "reason": "ping_failed"}),
			disabled:   m.sum("vmcp_keepalive_auto_disabled_total", b),
			alpha:      m.sum("vmcp_keepalive_attempt_total", map[string]string{"backend_id": alpha}),
		}, true
	}
	var before, after counts
	var logged []fakebackends.RequestRecord
	stable := waitUntil(ctx, 5*time.Second, func() bool {
		var ok1, ok2 bool
		before, ok1 = read()
		logged = pings(ctx, env, beta)
		after, ok2 = read()
		return ok1 && ok2 && before == after && before.attempts == before.successes+before.failures
	})
	g.Expect(stable).To(gomega.BeTrue(), "a quiet moment to compare counters (%+v, then %+v)", before, after)
	var okPings, badPings float64
	for _, p := range logged {
		if pingFailed(p) {
			badPings++
		} else {
			okPings++
		}
	}
	rec.SetFigure("keepalive_attempts", after.attempts)
	rec.SetFigure("keepalive_failures", after.failures)
	rec.SetFigure("keepalive_auto_disabled", after.disabled)
	g.Expect(after.attempts).To(gomega.Equal(float64(len(logged))), "vmcp_keepalive_attempt_total = pings beta received")
	g.Expect(after.successes).To(gomega.Equal(okPings), "vmcp_keepalive_success_total = pings beta answered")
	g.Expect(after.failures).To(gomega.Equal(badPings), "vmcp_keepalive_failure_total = pings beta failed")
	g.Expect(after.pingFailed).To(gomega.Equal(float64(kaMaxFailures)), "vmcp_keepalive_failure_total{reason=ping_failed}")
	g.Expect(after.disabled).To(gomega.Equal(1.0), "vmcp_keepalive_auto_disabled_total")
	g.Expect(after.alpha).To(gomega.BeZero(), "alpha has no keepalive")
}
