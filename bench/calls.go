package bench

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// runCalls2 starts two healthy backends behind the gateway and measures,
// per revision, calls (direct vs gateway), then session opens with two
// backends and many sessions.
func runCalls2(ctx context.Context, c *Config, results *history.Results) error {
	c.progress("starting 2 backends and %s", c.Target.Name())
	t, err := c.start(ctx, c.CallTimeout, c.echoScript("alpha", 1), c.echoScript("beta", 1))
	if err != nil {
		return err
	}
	defer t.close()
	for _, rev := range c.Revisions {
		err := record(ctx, results, "bench/calls/"+string(rev), "calls", func(rec *history.Recorder) error {
			return callFigures(ctx, c, t, rev, rec)
		})
		if err != nil {
			return err
		}
	}
	if err := record(ctx, results, "bench/open/2-backends", "open", func(rec *history.Recorder) error {
		return openFigures(ctx, c, t, rec)
	}); err != nil || c.Sessions == 0 {
		return err
	}
	return record(ctx, results, fmt.Sprintf("bench/open/%d-sessions", c.Sessions), "open", func(rec *history.Recorder) error {
		return manySessions(ctx, c, t, rec)
	})
}

// record runs measure as the bench scenario name (labels bench and
// group), adds it to results and returns ctx's error. The scenario fails
// when measure does: it could not measure or a healthy call failed.
func record(ctx context.Context, results *history.Results, name, group string, measure func(*history.Recorder) error) error {
	rec := history.NewRecorder(name, "bench", group)
	setLoad := func(k string) {
		if l := loadAverage(); l >= 0 {
			rec.SetFigure(k, l)
		}
	}
	setLoad("machine.loadavg_start")
	err := measure(rec)
	setLoad("machine.loadavg_end")
	if err != nil {
		rec.Fail(err.Error())
	} else {
		rec.Pass()
	}
	results.Add(rec)
	return ctx.Err()
}

// round is one measurement of one endpoint.
type round struct {
	load    LoadResult
	c1      LoadResult
	cpu     []time.Duration // per measured pid, over the load run
	samples []ProcSample
	// client is this process's CPU over the load run (the load
	// generator's), machineBusy the whole machine's busy CPU; -1 when
	// unreadable.
	client, machineBusy time.Duration
}

// measure opens clients at url, then runs the load while reading the CPU
// of pids, then a one-client run for the unloaded latency.
func measure(ctx context.Context, c *Config, url, tool string, rev history.Revision, pids ...int) (round, error) {
	clients, err := dialClients(ctx, url, rev, c.Clients, c.CallTimeout)
	if err != nil {
		return round{}, fmt.Errorf("open %d %s clients at %s: %w", c.Clients, rev, url, err)
	}
	stopCPU := startCPU(append(pids, 0)...) // 0: this process, the clients
	busy := machineBusy()
	var r round
	r.load = runCalls(ctx, clients, tool, c.Calls, c.Duration, c.CallTimeout)
	r.machineBusy = -1
	if now := machineBusy(); busy >= 0 && now >= 0 {
		r.machineBusy = now - busy
	}
	r.cpu, r.samples = stopCPU()
	last := len(r.cpu) - 1
	r.client, r.cpu, r.samples = r.cpu[last], r.cpu[:last], r.samples[:last]
	// One client: the latency a lone caller sees.
	r.c1 = runCalls(ctx, clients[:1], tool, 300, min(c.Duration/2, time.Second), c.CallTimeout)
	closeClients(clients)
	return r, ctx.Err()
}

// callFigures measures calls direct and through the gateway, c.Pairs
// times (a pair: one direct run and one gateway run, back to back, the
// order alternating from pair to pair so a machine that speeds up or
// slows down over the step favours neither side), and records the pair
// whose throughput ratio is the median (pairFigures).
func callFigures(ctx context.Context, c *Config, t *topology, rev history.Revision, rec *history.Recorder) error {
	alpha := t.backends[0]
	bpid, gpid := pidOf(alpha), pidOf(t.gateway)
	tool, err := c.exposedEcho(ctx, t, alpha.Name())
	if err != nil {
		return err
	}
	runDirect := func() (round, error) { return measure(ctx, c, alpha.URL(), c.echoTool(alpha.Name()), rev, bpid) }
	runGateway := func() (round, error) { return measure(ctx, c, t.gateway.MCPURL(), tool, rev, gpid, bpid) }
	pairs, err := measurePairs(c.Pairs, runDirect, runGateway, func(i int, p pair) {
		if c.Pairs > 1 {
			c.progress("calls %s, pair %d of %d: direct %.0f/s, gateway %.0f/s (%.2f×)", rev, i+1, c.Pairs,
				p.direct.load.Throughput, p.gw.load.Throughput, p.ratio())
		}
	})
	if err != nil {
		return err
	}
	return pairFigures(c, rev, rec, pairs)
}

// measurePairs makes n pairs of runs: direct then gateway in the first,
// gateway then direct in the second, and so on; done hears of each pair
// when it is measured. The first error ends it.
func measurePairs(n int, direct, gateway func() (round, error), done func(int, pair)) ([]pair, error) {
	pairs := make([]pair, 0, n)
	for i := range n {
		var p pair
		var err error
		if i%2 == 0 {
			if p.direct, err = direct(); err == nil {
				p.gw, err = gateway()
			}
		} else if p.gw, err = gateway(); err == nil {
			p.direct, err = direct()
		}
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, p)
		done(i, p)
	}
	return pairs, nil
}

// pair is one direct run and one gateway run, back to back.
type pair struct{ direct, gw round }

// ratio is the pair's throughput through the gateway ÷ direct (0 when
// the direct run made no call).
func (p pair) ratio() float64 {
	if p.direct.load.Throughput <= 0 {
		return 0
	}
	return p.gw.load.Throughput / p.direct.load.Throughput
}

// medianPair is the pair whose throughput ratio is the median (the upper
// one of an even count), and the lowest and highest ratio.
func medianPair(pairs []pair) (med pair, lo, hi float64) {
	s := slices.Clone(pairs)
	slices.SortStableFunc(s, func(a, b pair) int { return cmp.Compare(a.ratio(), b.ratio()) })
	return s[len(s)/2], s[0].ratio(), s[len(s)-1].ratio()
}

// pairFigures records the figures of the median pair of pairs, with
// the spread of the throughput and CPU-bound ratios over all of them
// (ratio.throughput_min/_max, ratio.cpu_bound_throughput_min/_max,
// pairs), and fails when a healthy call failed in any pair.
func pairFigures(c *Config, rev history.Revision, rec *history.Recorder, pairs []pair) error {
	med, lo, hi := medianPair(pairs)
	direct, gw := med.direct, med.gw
	set := rec.SetFigure
	for _, e := range []struct {
		name string
		r    round
	}{{"direct", direct}, {"gateway", gw}} {
		set(e.name+".calls", float64(e.r.load.Calls))
		set(e.name+".throughput_per_s", e.r.load.Throughput)
		set(e.name+".p50_ms", ms(e.r.load.P50))
		set(e.name+".p99_ms", ms(e.r.load.P99))
		set(e.name+".max_ms", ms(e.r.load.Max))
		set(e.name+".c1_p50_ms", ms(e.r.c1.P50))
	}
	nd, ng := errorCounts(pairs)
	set("direct.errors", float64(nd))
	set("gateway.errors", float64(ng))
	set("clients", float64(c.Clients))
	set("pairs", float64(len(pairs)))
	if direct.load.Throughput > 0 {
		set("ratio.throughput", gw.load.Throughput/direct.load.Throughput)
	}
	if direct.load.P50 > 0 {
		set("ratio.p50", float64(gw.load.P50)/float64(direct.load.P50))
	}
	set("c1_p50_overhead_ms", ms(gw.c1.P50-direct.c1.P50))
	cpu := cpuFigures(direct, gw)
	share := shareFigures(direct, gw)
	for _, m := range []map[string]float64{cpu, share, spreadFigures(pairs, lo, hi)} {
		for k, v := range m {
			set(k, v)
		}
	}
	if gw.cpu[0] >= 0 {
		set("gateway.rss_peak_mb", float64(gw.samples[0].PeakRSS)/(1<<20))
	}
	spread := ""
	if len(pairs) > 1 {
		spread = fmt.Sprintf(", the median of %d pairs, %.2f–%.2f×", len(pairs), lo, hi)
	}
	c.progress("calls %s: direct %.0f/s p50 %.2fms | gateway %.0f/s (%.2f×%s; CPU-bound %s) p50 %.2fms p99 %.2fms | CPU/call: gateway %.3fms = %s the direct backend's, backend amplification %s | cores used %.2f / %.2f of %.0f, machine busy %.2f / %.2f | 1 client p50 +%.2fms | errors %d/%d",
		rev, direct.load.Throughput, ms(direct.load.P50), gw.load.Throughput, gw.load.Throughput/max(direct.load.Throughput, 1e-9), spread, times(share, "ratio.cpu_bound_throughput"),
		ms(gw.load.P50), ms(gw.load.P99), cpu["gateway.cpu_ms_per_call"], times(cpu, "ratio.cpu_per_call"), times(cpu, "ratio.backend_amplification"),
		share["direct.cores_used"], share["gateway.cores_used"], share["machine.cores"], share["direct.machine_busy_cores"], share["gateway.machine_busy_cores"],
		ms(gw.c1.P50-direct.c1.P50), nd, ng)
	return pairErrors(pairs, nd, ng)
}

// spreadFigures are the lowest and highest throughput ratio over pairs
// (lo, hi: medianPair's) and CPU-bound ratio; none for a single pair
// (the median's figures say it all).
func spreadFigures(pairs []pair, lo, hi float64) map[string]float64 {
	if len(pairs) < 2 {
		return map[string]float64{}
	}
	f := map[string]float64{"ratio.throughput_min": lo, "ratio.throughput_max": hi}
	var bound []float64
	for _, p := range pairs {
		if v, ok := shareFigures(p.direct, p.gw)["ratio.cpu_bound_throughput"]; ok {
			bound = append(bound, v)
		}
	}
	if len(bound) > 0 {
		f["ratio.cpu_bound_throughput_min"], f["ratio.cpu_bound_throughput_max"] = slices.Min(bound), slices.Max(bound)
	}
	return f
}

// errorCounts are the failed calls of every pair, direct and through
// the gateway.
func errorCounts(pairs []pair) (direct, gateway int) {
	for _, p := range pairs {
		direct += p.direct.load.Errors
		gateway += p.gw.load.Errors
	}
	return direct, gateway
}

// pairErrors says whether a run made no call in any pair, or a healthy
// call failed (nd direct and ng through the gateway: errorCounts).
func pairErrors(pairs []pair, nd, ng int) error {
	var first string
	for _, p := range pairs {
		first = cmp.Or(first, p.gw.load.FirstError, p.direct.load.FirstError)
		if p.gw.load.Calls == 0 || p.direct.load.Calls == 0 {
			return fmt.Errorf("no call finished (direct %d, gateway %d)", p.direct.load.Calls, p.gw.load.Calls)
		}
	}
	if nd+ng > 0 {
		return fmt.Errorf("%d healthy calls failed (direct %d, gateway %d, over %d pair(s)); first: %s", nd+ng, nd, ng, len(pairs), first)
	}
	return nil
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
