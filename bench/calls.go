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

func callFigures(ctx context.Context, c *Config, t *topology, rev history.Revision, rec *history.Recorder) error {
	alpha := t.backends[0]
	bpid, gpid := pidOf(alpha), pidOf(t.gateway)
	tool, err := c.exposedEcho(ctx, t, alpha.Name())
	if err != nil {
		return err
	}
	direct, err := measure(ctx, c, alpha.URL(), c.echoTool(alpha.Name()), rev, bpid)
	if err != nil {
		return err
	}
	gw, err := measure(ctx, c, t.gateway.MCPURL(), tool, rev, gpid, bpid)
	if err != nil {
		return err
	}
	set := rec.SetFigure
	for _, e := range []struct {
		name string
		r    round
	}{{"direct", direct}, {"gateway", gw}} {
		set(e.name+".calls", float64(e.r.load.Calls))
		set(e.name+".errors", float64(e.r.load.Errors))
		set(e.name+".throughput_per_s", e.r.load.Throughput)
		set(e.name+".p50_ms", ms(e.r.load.P50))
		set(e.name+".p99_ms", ms(e.r.load.P99))
		set(e.name+".max_ms", ms(e.r.load.Max))
		set(e.name+".c1_p50_ms", ms(e.r.c1.P50))
	}
	set("clients", float64(c.Clients))
	if direct.load.Throughput > 0 {
		set("ratio.throughput", gw.load.Throughput/direct.load.Throughput)
	}
	if direct.load.P50 > 0 {
		set("ratio.p50", float64(gw.load.P50)/float64(direct.load.P50))
	}
	set("c1_p50_overhead_ms", ms(gw.c1.P50-direct.c1.P50))
	cpu := cpuFigures(direct, gw)
	share := shareFigures(direct, gw)
	for _, m := range []map[string]float64{cpu, share} {
		for k, v := range m {
			set(k, v)
		}
	}
	if gw.cpu[0] >= 0 {
		set("gateway.rss_peak_mb", float64(gw.samples[0].PeakRSS)/(1<<20))
	}
	c.progress("calls %s: direct %.0f/s p50 %.2fms | gateway %.0f/s (%.2f×, CPU-bound %s) p50 %.2fms p99 %.2fms | CPU/call: gateway %.3fms = %s the direct backend's, backend amplification %s | cores used %.2f / %.2f of %.0f, machine busy %.2f / %.2f | 1 client p50 +%.2fms | errors %d/%d",
		rev, direct.load.Throughput, ms(direct.load.P50), gw.load.Throughput, gw.load.Throughput/max(direct.load.Throughput, 1e-9), times(share, "ratio.cpu_bound_throughput"),
		ms(gw.load.P50), ms(gw.load.P99), cpu["gateway.cpu_ms_per_call"], times(cpu, "ratio.cpu_per_call"), times(cpu, "ratio.backend_amplification"),
		share["direct.cores_used"], share["gateway.cores_used"], share["machine.cores"], share["direct.machine_busy_cores"], share["gateway.machine_busy_cores"],
		ms(gw.c1.P50-direct.c1.P50), direct.load.Errors, gw.load.Errors)
	if n := direct.load.Errors + gw.load.Errors; n > 0 {
		first := cmp.Or(gw.load.FirstError, direct.load.FirstError)
		return fmt.Errorf("%d healthy calls failed (direct %d, gateway %d); first: %s", n, direct.load.Errors, gw.load.Errors, first)
	}
	if gw.load.Calls == 0 || direct.load.Calls == 0 {
		return fmt.Errorf("no call finished (direct %d, gateway %d)", direct.load.Calls, gw.load.Calls)
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
