package scenarios

import (
	"context"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
)

// kaQuiet is how long beta's keepalive counters and pings must stand still
// for the baseline: longer than a live session's probe interval.
const kaQuiet = kaInterval + kaJitter + 50*time.Millisecond

// kaCounts are the keepalive metrics the scenario judges: beta's
// counters, and alpha's attempts (alpha has no keepalive).
type kaCounts struct{ attempts, successes, failures, pingFailed, timeouts, disabled, alpha float64 }

// minus is c counted from base; alpha stays as read (it must be zero).
func (c kaCounts) minus(base kaCounts) kaCounts {
	return kaCounts{
		attempts:   c.attempts - base.attempts,
		successes:  c.successes - base.successes,
		failures:   c.failures - base.failures,
		pingFailed: c.pingFailed - base.pingFailed,
		timeouts:   c.timeouts - base.timeouts,
		disabled:   c.disabled - base.disabled,
		alpha:      c.alpha,
	}
}

// readKaCounts scrapes the target's keepalive counters (through its metric
// name mapping).
func readKaCounts(ctx context.Context, env *harness.Env) (kaCounts, bool) {
	m, err := kit.ScrapeTargetMetrics(ctx, env)
	if err != nil {
		return kaCounts{}, false
	}
	b := map[string]string{"backend_id": beta}
	return kaCounts{
		attempts:   m.Sum("vmcp_keepalive_attempt_total", b),
		successes:  m.Sum("vmcp_keepalive_success_total", b),
		failures:   m.Sum("vmcp_keepalive_failure_total", b),
		pingFailed: m.Sum("vmcp_keepalive_failure_total", map[string]string{"backend_id": beta, "reason": "ping_failed"}),
		timeouts:   m.Sum("vmcp_keepalive_failure_total", map[string]string{"backend_id": beta, "reason": "timeout"}),
		disabled:   m.Sum("vmcp_keepalive_auto_disabled_total", b),
		alpha:      m.Sum("vmcp_keepalive_attempt_total", map[string]string{"backend_id": alpha}),
	}, true
}

// kaPings counts the pings a backend answered and failed.
type kaPings struct{ ok, bad int }

func countPings(ps []fakebackends.RequestRecord) kaPings {
	var n kaPings
	for _, p := range ps {
		if pingFailed(p) {
			n.bad++
		} else {
			n.ok++
		}
	}
	return n
}

// keepaliveBase is where the keepalive counters are judged from.
type keepaliveBase struct {
	counts kaCounts
	pings  kaPings
	// quiet is false when the counters or pings never stood still.
	quiet bool
}

// keepaliveBaseline waits, before the scenario's session opens, until
// beta's keepalive counters and its ping log have not moved for kaQuiet,
// and returns them. Another client's session may have probed beta before:
// the readiness probe's tools/list session of an exec target lives long
// enough for a probe or two on a loaded machine, and a gateway that counts
// a probe as an attempt when it starts, and then ends it without a result
// because that session closed (as the reference does), leaves an attempt
// that is neither a success nor a failure. That is a correct gateway; the
// scenario's own session's probes are counted exactly from the baseline.
// The sessions close asynchronously, hence the wait (at most 5 s).
func keepaliveBaseline(ctx context.Context, env *harness.Env) keepaliveBase {
	var b keepaliveBase
	b.quiet = kit.Until(ctx, 5*time.Second, func() bool {
		c1, ok1 := readKaCounts(ctx, env)
		p1 := countPings(pings(ctx, env, beta))
		kit.Sleep(ctx, kaQuiet)
		c2, ok2 := readKaCounts(ctx, env)
		p2 := countPings(pings(ctx, env, beta))
		b.counts, b.pings = c2, p2
		return ok1 && ok2 && c1 == c2 && p1 == p2
	})
	return b
}
