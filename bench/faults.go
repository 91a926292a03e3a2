package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// errorBatch is how many calls time-to-error makes on one endpoint before
// switching to the other, so load changes on the machine hit both alike.
const errorBatch = 10

// maxUnanswered ends an endpoint's time-to-error calls early: after this
// many calls ended by their own deadline, the rest would only wait too.
const maxUnanswered = 3

// runFaults starts alpha and beta behind a gateway configured with
// c.StallTimeout as its backend call timeout and measures, on beta: the
// time to error of an HTTP 403, the stall bound, then (last: it ends
// beta) the time to error of a SIGKILLed backend process. Every call is a
// legacy-session (2025-11-25) call with its own deadline.
func runFaults(ctx context.Context, c *Config, results *history.Results) error {
	c.progress("starting 2 backends and %s (backend call timeout %v) for the fault figures", c.Target.Name(), c.StallTimeout)
	t, err := c.start(ctx, c.StallTimeout, c.echoScript("alpha", 1), c.echoScript("beta", 1))
	if err != nil {
		return err
	}
	defer t.close()
	beta := t.backends[1]
	tool, err := c.exposedEcho(ctx, t, beta.Name())
	if err != nil {
		return err
	}
	pair, err := dialPair(ctx, c, t.gateway.MCPURL(), beta.URL())
	if err != nil {
		return err
	}
	defer closeClients(pair)
	if c.has(StepErrors) {
		if err := record(ctx, results, "bench/error/http-403", "error", func(rec *history.Recorder) error {
			return withFaults(ctx, beta, func() error { return timeToError(ctx, c, rec, pair, tool, beta.Name()) },
				faults.Fault{Kind: faults.KindHTTPStatus, Match: faults.Match{Method: "tools/call"}, Params: &faults.HTTPStatus{Status: 403, Body: &faults.Body{Text: "Forbidden"}}})
		}); err != nil {
			return err
		}
	}
	if c.has(StepStall) {
		if err := record(ctx, results, fmt.Sprintf("bench/stall/%v-timeout", c.StallTimeout), "stall", func(rec *history.Recorder) error {
			return withFaults(ctx, beta, func() error { return stallFigures(ctx, c, t, rec, tool, beta.Name()) },
				faults.Fault{Kind: faults.KindStall, Match: faults.Match{Method: "tools/call"}})
		}); err != nil {
			return err
		}
	}
	if !c.has(StepErrors) {
		return ctx.Err()
	}
	return record(ctx, results, "bench/error/sigkill", "error", func(rec *history.Recorder) error {
		if err := beta.Kill(ctx); err != nil {
			return err
		}
		rec.Note("backend %s (pid %d) killed with SIGKILL", beta.Name(), pidOf(beta))
		return timeToError(ctx, c, rec, pair, tool, beta.Name())
	})
}

// dialPair opens one legacy client at the gateway ([0]) and one at the
// backend directly ([1]).
func dialPair(ctx context.Context, c *Config, gatewayURL, backendURL string) ([]*history.Client, error) {
	g, err := dialClients(ctx, gatewayURL, history.RevisionLegacy, 1, c.CallTimeout)
	if err != nil {
		return nil, fmt.Errorf("gateway client: %w", err)
	}
	d, err := dialClients(ctx, backendURL, history.RevisionLegacy, 1, c.CallTimeout)
	if err != nil {
		closeClients(g)
		return nil, fmt.Errorf("direct client: %w", err)
	}
	return []*history.Client{g[0], d[0]}, nil
}

// withFaults sets fs on b, runs fn, and clears the faults again (also
// when ctx has ended: a stall is released before its clients close).
func withFaults(ctx context.Context, b runtimes.RunningBackend, fn func() error, fs ...faults.Fault) error {
	if err := b.SetFaults(ctx, fs...); err != nil {
		return err
	}
	err := fn()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if cerr := b.ClearFaults(cctx); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// timeToError calls backend's echo c.ErrorCalls times directly and as
// many times through the gateway (pair[1], pair[0]), one call at a time,
// in alternating batches, while backend fails them: how long until the
// client holds the error, and whether the gateway's error names the
// backend.
func timeToError(ctx context.Context, c *Config, rec *history.Recorder, pair []*history.Client, tool, backend string) error {
	var d, g outcomes
	for done := 0; done < c.ErrorCalls; done += errorBatch {
		for range min(errorBatch, c.ErrorCalls-done) {
			if d.unanswered < maxUnanswered {
				d.add(callOnce(ctx, pair[1], c.echoTool(backend), backend, c.CallTimeout))
			}
			if g.unanswered < maxUnanswered {
				g.add(callOnce(ctx, pair[0], tool, backend, c.CallTimeout))
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	d.set(rec, "direct", false)
	g.set(rec, "gateway", true)
	dp50, _, _ := quantiles(d.lat)
	gp50, gp99, _ := quantiles(g.lat)
	if dp50 > 0 {
		rec.SetFigure("ratio.p50", float64(gp50)/float64(dp50))
	}
	c.progress("%s: time to error p50 direct %.2fms | gateway %.2fms p99 %.2fms; %d/%d gateway errors name %s; unanswered direct %d gateway %d",
		rec.Name(), ms(dp50), ms(gp50), ms(gp99), g.named, g.failed, backend, d.unanswered, g.unanswered)
	if ok := len(d.lat) - d.failed + len(g.lat) - g.failed; ok > 0 {
		return fmt.Errorf("%d calls succeeded (direct %d, gateway %d): the fault was not in force, no time to error measured",
			ok, len(d.lat)-d.failed, len(g.lat)-g.failed)
	}
	return nil
}

// stallFigures makes c.StallCalls calls at once through the gateway (each
// its own client and session) while backend stalls every tools/call: when
// each call ends, against the gateway's configured call timeout, and
// whether the error names the backend. A call ended by its own deadline
// (c.StallDeadline) is unanswered: the gateway did not bound it. At the
// same time as many direct calls bound themselves (a client deadline of
// the same timeout): how late this machine ends a timed-out call by
// itself, the floor of the gateway's figure.
func stallFigures(ctx context.Context, c *Config, t *topology, rec *history.Recorder, tool, backend string) error {
	gw, err := dialClients(ctx, t.gateway.MCPURL(), history.RevisionLegacy, c.StallCalls, c.CallTimeout)
	if err != nil {
		return fmt.Errorf("open %d gateway clients: %w", c.StallCalls, err)
	}
	defer closeClients(gw)
	direct, err := dialClients(ctx, t.backends[1].URL(), history.RevisionLegacy, c.StallCalls, c.CallTimeout)
	if err != nil {
		return fmt.Errorf("open %d direct clients: %w", c.StallCalls, err)
	}
	defer closeClients(direct)
	gOuts, dOuts := make([]outcome, len(gw)), make([]outcome, len(direct))
	var wg sync.WaitGroup
	for i := range gw {
		wg.Go(func() { gOuts[i] = callOnce(ctx, gw[i], tool, backend, c.StallDeadline) })
		wg.Go(func() { dOuts[i] = callOnce(ctx, direct[i], c.echoTool(backend), backend, c.StallTimeout) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var g, d outcomes
	for i := range gOuts {
		g.add(gOuts[i])
		d.add(dOuts[i])
	}
	g.set(rec, "gateway", true)
	d.set(rec, "direct", false)
	p50, _, mx := quantiles(g.lat)
	dp50, _, dmx := quantiles(d.lat)
	rec.SetFigure("gateway.call_timeout_ms", ms(c.StallTimeout))
	rec.SetFigure("client_deadline_ms", ms(c.StallDeadline))
	rec.SetFigure("gateway.p50_over_timeout_ms", ms(p50-c.StallTimeout))
	rec.SetFigure("gateway.max_over_timeout_ms", ms(mx-c.StallTimeout))
	rec.SetFigure("direct.p50_over_timeout_ms", ms(dp50-c.StallTimeout))
	rec.SetFigure("direct.max_over_timeout_ms", ms(dmx-c.StallTimeout))
	c.progress("%s: %d stalled calls ended after p50 %.1fms max %.1fms (configured %v: max +%.1fms; a direct call bounded by its own %v deadline: max +%.1fms); %d/%d errors name %s; unanswered %d",
		rec.Name(), len(gOuts), ms(p50), ms(mx), c.StallTimeout, ms(mx-c.StallTimeout), c.StallTimeout, ms(dmx-c.StallTimeout),
		g.named, g.failed, backend, g.unanswered)
	if ok := len(g.lat) - g.failed + len(d.lat) - d.failed; ok > 0 {
		return fmt.Errorf("%d calls succeeded (gateway %d, direct %d): the stall was not in force", ok, len(g.lat)-g.failed, len(d.lat)-d.failed)
	}
	return nil
}
