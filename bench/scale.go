package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// scaleWorkers bounds the calls in flight of the paced scale load (a
// gateway slower than the rate makes the load fall behind, not pile up).
const scaleWorkers = 256

// runScale measures, for each of c.ScaleSessions, a fresh gateway in
// front of four backends of which the last crash-loops: S sessions opened,
// then healthy calls to the three others spread over the sessions.
func runScale(ctx context.Context, c *Config, results *history.Results) error {
	for _, n := range c.ScaleSessions {
		c.progress("scale %d sessions: starting 4 backends and %s", n, c.Target.Name())
		t, err := c.start(ctx, c.CallTimeout, c.echoScript("b1", 1), c.echoScript("b2", 1), c.echoScript("b3", 1), c.echoScript("b4", 1))
		if err != nil {
			return err
		}
		err = record(ctx, results, fmt.Sprintf("bench/scale/%d-sessions", n), "scale", func(rec *history.Recorder) error {
			return scaleFigures(ctx, c, t, n, rec)
		})
		t.close()
		if err != nil {
			return err
		}
	}
	return nil
}

// scaleFigures crash-loops t's last backend, opens n legacy sessions at
// the gateway and n at the healthy backends directly (spread over them),
// then calls the healthy backends' echo at c.ScaleRate calls per second
// for c.ScaleDuration, spread over the sessions: directly first (the
// machine's own tail latency under the same load and crash loop), then
// through the gateway.
func scaleFigures(ctx context.Context, c *Config, t *topology, n int, rec *history.Recorder) error {
	healthy, looping := t.backends[:len(t.backends)-1], t.backends[len(t.backends)-1]
	tools, own := make([]string, len(healthy)), make([]string, len(healthy))
	for i, b := range healthy {
		tool, err := c.exposedEcho(ctx, t, b.Name())
		if err != nil {
			return err
		}
		tools[i], own[i] = tool, c.echoTool(b.Name())
	}
	gpid := pidOf(t.gateway)
	stopCPU := startCPU(gpid)
	loop, err := startCrashLoop(ctx, looping, c.CrashEvery)
	if err != nil {
		return err
	}
	clients, errs, wall := openSessions(ctx, t.gateway.MCPURL(), n, c.CallTimeout)
	defer closeClients(clients)
	openCPU, _ := stopCPU()
	gw := liveClients(clients)
	c.progress("scale %d sessions: opened at the gateway in %.2fs (%d failed) while %s crash-loops every %v",
		n, wall.Seconds(), n-len(gw), looping.Name(), c.CrashEvery)
	direct, derrs, dwall := openDirect(ctx, c, healthy, n)
	defer closeClients(direct)
	c.progress("scale %d sessions: %d opened directly in %.2fs; calls at %d/s for %v, direct then through the gateway",
		n, len(liveClients(direct)), dwall.Seconds(), c.ScaleRate, c.ScaleDuration)
	var d, g scaleLoad
	if len(direct) > 0 && !slices.Contains(direct, nil) {
		// Session k is at healthy[k mod len] (openDirect), so it calls
		// that backend's own echo.
		d = pacedLoad(ctx, c, "direct", func(i int) (*history.Client, string) {
			k := i % len(direct)
			return direct[k], own[k%len(own)]
		})
	}
	stopCPU = startCPU(gpid)
	if len(gw) > 0 {
		g = pacedLoad(ctx, c, "gateway", func(i int) (*history.Client, string) {
			return gw[i%len(gw)], tools[(i+i/len(gw))%len(tools)]
		})
	}
	cpu, now := stopCPU()
	restarts, failures, loopErr := loop.stop()

	set := rec.SetFigure
	set("sessions", float64(n))
	set("backends", float64(len(t.backends)))
	set("rate_per_s", float64(c.ScaleRate))
	set("duration_s", c.ScaleDuration.Seconds())
	set("gateway.open_all_s", wall.Seconds())
	set("gateway.open_errors", float64(n-len(gw)))
	set("direct.open_all_s", dwall.Seconds())
	d.set(rec, "direct")
	g.set(rec, "gateway")
	if dp99 := quantile(d.lat, 0.99); dp99 > 0 {
		set("ratio.p99", float64(quantile(g.lat, 0.99))/float64(dp99))
	}
	set("crashloop.period_ms", ms(c.CrashEvery))
	set("crashloop.restarts", float64(restarts))
	set("crashloop.failures", float64(failures))
	if openCPU[0] >= 0 {
		set("gateway.open_cpu_s", openCPU[0].Seconds())
	}
	if cpu[0] >= 0 {
		set("gateway.cpu_s", cpu[0].Seconds())
		set("gateway.cpu_ms_per_call", ms(cpu[0])/float64(max(len(g.lat), 1)))
		set("gateway.rss_mb", float64(now[0].RSS)/(1<<20))
		set("gateway.rss_peak_mb", float64(now[0].PeakRSS)/(1<<20))
	}
	c.progress("scale %d sessions: healthy calls direct %d (%d errors) p50 %.2fms p99 %.2fms | gateway %d (%d errors, %d unanswered) p50 %.2fms p99 %.2fms max %.1fms; %s restarted %d times; gateway RSS peak %.0f MB",
		n, len(d.lat), d.failed, ms(quantile(d.lat, 0.5)), ms(quantile(d.lat, 0.99)), len(g.lat), g.failed, g.unanswered,
		ms(quantile(g.lat, 0.5)), ms(quantile(g.lat, 0.99)), ms(quantile(g.lat, 1)), looping.Name(), restarts, float64(now[0].PeakRSS)/(1<<20))
	var problems []error
	if n > len(gw) {
		problems = append(problems, fmt.Errorf("%d of %d sessions failed to open at the gateway; first: %v", n-len(gw), n, cmp.Or(errs...)))
	}
	if err := cmp.Or(derrs...); err != nil {
		problems = append(problems, fmt.Errorf("direct sessions: %w", err))
	}
	for _, l := range []struct {
		name string
		l    scaleLoad
	}{{"gateway", g}, {"direct", d}} {
		if l.l.failed > 0 {
			problems = append(problems, fmt.Errorf("%s: %d of %d calls to healthy backends failed (%d unanswered); first: %s",
				l.name, l.l.failed, len(l.l.lat), l.l.unanswered, l.l.first))
		}
		if len(l.l.lat) == 0 && ctx.Err() == nil {
			problems = append(problems, fmt.Errorf("%s: no call finished", l.name))
		}
	}
	if failures > 0 {
		problems = append(problems, fmt.Errorf("crash loop of %s: %d restarts failed; first: %v", looping.Name(), failures, loopErr))
	}
	if ctx.Err() != nil {
		problems = append(problems, fmt.Errorf("interrupted: %w", context.Cause(ctx)))
	} else if restarts == 0 {
		problems = append(problems, fmt.Errorf("%s never restarted: the run ended before the crash loop's period (%v)", looping.Name(), c.CrashEvery))
	}
	return errors.Join(problems...)
}

// openDirect opens n legacy sessions at the backends directly, session i
// at backends[i mod len], all bound by c.CallTimeout each.
func openDirect(ctx context.Context, c *Config, backends []runtimes.RunningBackend, n int) ([]*history.Client, []error, time.Duration) {
	t0 := time.Now()
	var clients []*history.Client
	var errs []error
	per := make([][]*history.Client, len(backends))
	for k, b := range backends {
		cl, e, _ := openSessions(ctx, b.URL(), (n+len(backends)-1-k)/len(backends), c.CallTimeout)
		per[k] = cl
		errs = append(errs, e...)
	}
	// Interleave, so that session i is at backends[i mod len].
	for i := 0; len(clients) < n; i++ {
		k := i % len(backends)
		if j := i / len(backends); j < len(per[k]) {
			clients = append(clients, per[k][j])
		}
	}
	return clients, errs, time.Since(t0)
}

func liveClients(clients []*history.Client) []*history.Client {
	return slices.DeleteFunc(slices.Clone(clients), func(cl *history.Client) bool { return cl == nil })
}

// scaleLoad is what a paced load measured (named is not counted).
type scaleLoad struct {
	outcomes
	elapsed time.Duration
	lagMax  time.Duration // how far behind schedule a call was issued, at most
}

// set writes the figures of one endpoint (prefix "direct" or "gateway").
func (l scaleLoad) set(rec *history.Recorder, prefix string) {
	setCallFigures(rec, prefix, l.lat, l.failed, l.unanswered)
	if l.elapsed > 0 {
		rec.SetFigure(prefix+".throughput_per_s", float64(len(l.lat))/l.elapsed.Seconds())
	}
	rec.SetFigure(prefix+".pacer_lag_max_ms", ms(l.lagMax))
	if l.first != "" {
		rec.Note("%s: first healthy-call error: %s", prefix, l.first)
	}
}

// pacedLoad issues calls at c.ScaleRate per second for c.ScaleDuration
// (at most scaleWorkers in flight, each with c.CallTimeout); call i goes
// to pick(i), a client and the tool's name there. It prints progress
// every 10 s.
func pacedLoad(ctx context.Context, c *Config, label string, pick func(i int) (*history.Client, string)) scaleLoad {
	jobs := make(chan int)
	lat := make([][]time.Duration, scaleWorkers)
	var nCalls, nErrs, nUnanswered atomic.Int64
	var firstMu sync.Mutex
	var out scaleLoad
	var wg sync.WaitGroup
	for w := range scaleWorkers {
		wg.Go(func() {
			for i := range jobs {
				cl, tool := pick(i)
				cctx, cancel := context.WithTimeout(ctx, c.CallTimeout)
				t0 := time.Now()
				res, err := cl.MCP().CallTool(cctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: map[string]any{"msg": "hello"}}})
				d := time.Since(t0)
				unanswered := err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded)
				cancel()
				if ctx.Err() != nil {
					continue
				}
				lat[w] = append(lat[w], d)
				nCalls.Add(1)
				if err == nil && (res == nil || res.IsError) {
					err = fmt.Errorf("isError result: %s", history.ResultText(res))
				}
				if err != nil {
					nErrs.Add(1)
					if unanswered {
						nUnanswered.Add(1)
					}
					firstMu.Lock()
					if out.first == "" {
						out.first = fmt.Sprintf("%s: %v", tool, err)
					}
					firstMu.Unlock()
				}
			}
		})
	}
	interval := time.Second / time.Duration(c.ScaleRate)
	start := time.Now()
	lastProgress := start
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if due.Sub(start) >= c.ScaleDuration || time.Since(start) >= c.ScaleDuration {
			break
		}
		if wait := time.Until(due); wait > 0 && !sleepFor(ctx, wait) {
			break
		}
		select {
		case jobs <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		out.lagMax = max(out.lagMax, time.Since(due))
		if time.Since(lastProgress) >= 10*time.Second {
			lastProgress = time.Now()
			c.progress("scale %s: %.0fs of %v, %d calls, %d errors", label, time.Since(start).Seconds(), c.ScaleDuration, nCalls.Load(), nErrs.Load())
		}
	}
	close(jobs)
	wg.Wait()
	out.elapsed = time.Since(start)
	out.lat = slices.Concat(lat...)
	out.failed, out.unanswered = int(nErrs.Load()), int(nUnanswered.Load())
	return out
}
