package scenarios_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// TestKeepaliveAnotherSessionCutOff: a correct gateway whose keepalive
// probed beta in another client's session, and counted a probe cut off by
// that session's close as an attempt with no outcome (an exec target's
// readiness probe can do that on a loaded machine), passes the keepalive
// scenario: its counters are judged from a baseline taken before the
// scenario's session opens, and still exactly.
func TestKeepaliveAnotherSessionCutOff(t *testing.T) {
	t.Parallel()
	sc := scenario(t, "keepalive/legacy/streamable-http")
	target := &cutOffNeighbour{inner: targets.Reference{TargetName: "reference-cut-off-neighbour"}}
	res := runJudged(t, sc, runner.RunConfig{Target: target})
	t.Logf("%s: %s in %s: %s", sc.Name, res.Verdict, res.Duration.D(), res.Reason)
	if target.cutOff.Load() == 0 {
		t.Fatal("no neighbour session's probe was cut off: the test did not set up what it tests")
	}
	if res.Verdict != history.VerdictPassed {
		t.Fatalf("want passed: %s %s", res.Verdict, res.Reason)
	}
	for _, c := range res.Checks {
		if strings.HasPrefix(c.Name, "metrics:") {
			t.Logf("%s: %s", c.Name, c.Observed)
			if c.Verdict != history.CheckPassed || strings.Contains(c.Observed, "baseline {attempts:0 ") {
				t.Errorf("the metrics check did not count from the neighbour's cut-off attempt: %+v", c)
			}
		}
	}
}

// cutOffNeighbour is the reference gateway with a neighbour: before the
// scenario runs, another client opens a legacy session and closes it while
// its keepalive probe of beta is in flight (beta's pings slowed by 150 ms,
// below the probe timeout), until the gateway's counters show an attempt
// that is neither a success nor a failure (at most 10 sessions).
type cutOffNeighbour struct {
	inner  targets.Reference
	cutOff atomic.Int32
}

func (n *cutOffNeighbour) Name() string                       { return n.inner.Name() }
func (n *cutOffNeighbour) Capabilities() targets.Capabilities { return n.inner.Capabilities() }

func (n *cutOffNeighbour) Start(ctx context.Context, topo targets.TopologyInfo) (targets.Gateway, error) {
	gw, err := n.inner.Start(ctx, topo)
	if err != nil {
		return nil, err
	}
	if err := n.cutOffOne(ctx, gw, topo); err != nil {
		_ = gw.Close(context.Background())
		return nil, err
	}
	return gw, nil
}

func (n *cutOffNeighbour) cutOffOne(ctx context.Context, gw targets.Gateway, topo targets.TopologyInfo) error {
	var admin *runtimes.AdminAPI
	for _, b := range topo.Backends {
		if b.Name == kit.Beta {
			admin = runtimes.NewAdminAPI(b.AdminURL, "")
		}
	}
	if admin == nil {
		return fmt.Errorf("no backend %s", kit.Beta)
	}
	slow := faults.Fault{Kind: faults.KindLatency, Match: faults.Match{Method: "ping"}, Params: &faults.Latency{Delay: fakebackends.Duration(150 * time.Millisecond)}}
	if err := admin.SetFaults(ctx, slow); err != nil {
		return err
	}
	defer func() { _ = admin.ClearFaults(context.Background()) }()
	cutOff := func() bool {
		m, err := kit.ScrapeMetrics(ctx, gw.BaseURL())
		b := map[string]string{"backend_id": kit.Beta}
		return err == nil && m.Sum("vmcp_keepalive_attempt_total", b) > m.Sum("vmcp_keepalive_success_total", b)+m.Sum("vmcp_keepalive_failure_total", b)
	}
	for range 10 {
		c, err := history.Dial(ctx, gw.MCPURL(), history.RevisionLegacy, history.NewRecorder("neighbour"), history.WithCloseGrace(200*time.Millisecond))
		if err != nil {
			return err
		}
		// The first probe comes within interval/4 (75 ms) of the session's
		// start and takes at least 150 ms.
		kit.Sleep(ctx, 110*time.Millisecond)
		_ = c.Close(ctx)
		if kit.Until(ctx, time.Second, cutOff) {
			n.cutOff.Add(1)
			return neighboursGone(ctx, gw)
		}
	}
	return nil
}

// neighboursGone waits (10 s at most) until the gateway lists no client
// session: the scenario presumes the neighbours' sessions, and their
// keepalives of beta, gone (under .ci/load a closed neighbour's session
// was still probing beta when the scenario counted its probes).
func neighboursGone(ctx context.Context, gw targets.Gateway) error {
	var left int
	gone := kit.Until(ctx, 10*time.Second, func() bool {
		var body struct {
			Sessions []json.RawMessage `json:"sessions"`
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, gw.BaseURL()+"/api/sessions", nil)
		if err != nil {
			return false
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&body) != nil {
			return false
		}
		left = len(body.Sessions)
		return left == 0
	})
	if !gone {
		return fmt.Errorf("the neighbours' sessions were not gone 10 s after they closed (%d listed)", left)
	}
	return nil
}
