package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
)

// scaleWorkers bounds the calls in flight of the paced scale load (a
// gateway slower than the rate makes the load fall behind, not pile up).
const scaleWorkers = 256

// runScale measures, for each of c.ScaleSessions, a fresh gateway in
// front of four backends of which the last crash-loops: S sessions opened,
// then healthy calls to the three others spread over the sessions.
func runScale(ctx context.Context, c *Config, results *harness.Results) error {
	for _, n := range c.ScaleSessions {
		c.progress("scale %d sessions: starting 4 backends and %s", n, c.Target.Name())
		t, err := c.start(ctx, c.CallTimeout, echoScript("b1", 1), echoScript("b2", 1), echoScript("b3", 1), echoScript("b4", 1))
		if err != nil {
			return err
		}
		rec := harness.NewRecorder(fmt.Sprintf("bench/scale/%d-sessions", n), "bench", "scale")
		finish(rec, scaleFigures(ctx, c, t, n, rec))
		t.close()
		results.Add(rec)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// scaleFigures crash-loops t's last backend, opens n legacy sessions at
// the gateway, then calls the other backends' echo at c.ScaleRate calls
// per second for c.ScaleDuration, spread over the sessions.
func scaleFigures(ctx context.Context, c *Config, t *topology, n int, rec *harness.Recorder) error {
	healthy, looping := t.backends[:len(t.backends)-1], t.backends[len(t.backends)-1]
	tools := make([]string, len(healthy))
	for i, b := range healthy {
		tool, err := findTool(ctx, t.gateway.MCPURL(), harness.RevisionLegacy, b.Name(), "echo", c.CallTimeout)
		if err != nil {
			return err
		}
		tools[i] = tool
	}
	gpid := pidOf(t.gateway)
	m := startCPU(gpid)
	loop, err := startCrashLoop(ctx, looping, c.CrashEvery)
	if err != nil {
		return err
	}
	clients, errs, wall := openSessions(ctx, t.gateway.MCPURL(), n, c.CallTimeout)
	defer closeClients(clients)
	var live []*harness.Client
	for _, cl := range clients {
		if cl != nil {
			live = append(live, cl)
		}
	}
	c.progress("scale %d sessions: opened in %.2fs (%d failed) while %s crash-loops every %v; calls at %d/s for %v",
		n, wall.Seconds(), n-len(live), looping.Name(), c.CrashEvery, c.ScaleRate, c.ScaleDuration)
	openCPU, _ := m.stop()
	m = startCPU(gpid)
	var l scaleLoad
	if len(live) > 0 {
		l = pacedLoad(ctx, c, live, tools)
	}
	cpu, now := m.stop()
	restarts, failures, loopErr := loop.stop()

	set := rec.SetFigure
	set("sessions", float64(n))
	set("backends", float64(len(t.backends)))
	set("rate_per_s", float64(c.ScaleRate))
	set("duration_s", c.ScaleDuration.Seconds())
	set("gateway.open_all_s", wall.Seconds())
	set("gateway.open_errors", float64(n-len(live)))
	set("gateway.calls", float64(len(l.lat)))
	set("gateway.errors", float64(l.errors))
	set("gateway.unanswered", float64(l.unanswered))
	p50, p99, mx := quantiles(l.lat)
	set("gateway.p50_ms", ms(p50))
	set("gateway.p99_ms", ms(p99))
	set("gateway.max_ms", ms(mx))
	if l.elapsed > 0 {
		set("gateway.throughput_per_s", float64(len(l.lat))/l.elapsed.Seconds())
	}
	set("pacer_lag_max_ms", ms(l.lagMax))
	set("crashloop.period_ms", ms(c.CrashEvery))
	set("crashloop.restarts", float64(restarts))
	set("crashloop.failures", float64(failures))
	if openCPU[0] >= 0 {
		set("gateway.open_cpu_s", openCPU[0].Seconds())
	}
	if cpu[0] >= 0 {
		set("gateway.cpu_s", cpu[0].Seconds())
		set("gateway.cpu_ms_per_call", ms(cpu[0])/float64(max(len(l.lat), 1)))
		set("gateway.rss_mb", float64(now[0].RSS)/(1<<20))
		set("gateway.rss_peak_mb", float64(now[0].PeakRSS)/(1<<20))
	}
	if l.first != "" {
		rec.Note("first healthy-call error: %s", l.first)
	}
	c.progress("scale %d sessions: %d healthy calls, %d errors (%d unanswered), p50 %.2fms p99 %.2fms max %.1fms; %s restarted %d times; gateway RSS peak %.0f MB",
		n, len(l.lat), l.errors, l.unanswered, ms(p50), ms(p99), ms(mx), looping.Name(), restarts, float64(now[0].PeakRSS)/(1<<20))
	var problems []error
	if n > len(live) {
		problems = append(problems, fmt.Errorf("%d of %d sessions failed to open; first: %v", n-len(live), n, firstErr(errs)))
	}
	if l.errors > 0 {
		problems = append(problems, fmt.Errorf("%d of %d calls to healthy backends failed (%d unanswered); first: %s", l.errors, len(l.lat), l.unanswered, l.first))
	}
	if failures > 0 {
		problems = append(problems, fmt.Errorf("crash loop of %s: %d restarts failed; first: %v", looping.Name(), failures, loopErr))
	}
	if restarts == 0 && ctx.Err() == nil {
		problems = append(problems, fmt.Errorf("%s never restarted: the load (%v) ended before the crash loop's period (%v)", looping.Name(), c.ScaleDuration, c.CrashEvery))
	}
	if len(l.lat) == 0 && ctx.Err() == nil {
		problems = append(problems, errors.New("no call finished"))
	}
	return errors.Join(problems...)
}

// scaleLoad is what a paced load measured.
type scaleLoad struct {
	lat        []time.Duration
	errors     int
	unanswered int
	first      string
	elapsed    time.Duration
	lagMax     time.Duration // how far behind schedule a call was issued, at most
}

// pacedLoad issues calls at c.ScaleRate per second for c.ScaleDuration
// (at most scaleWorkers in flight, each with c.CallTimeout), call i on
// session i mod S and on tools[(i + i/S) mod len(tools)], and prints
// progress every 10 s.
func pacedLoad(ctx context.Context, c *Config, clients []*harness.Client, tools []string) scaleLoad {
	jobs := make(chan int)
	lat := make([][]time.Duration, scaleWorkers)
	var nCalls, nErrs, nUnanswered atomic.Int64
	var firstMu sync.Mutex
	var out scaleLoad
	var wg sync.WaitGroup
	for w := range scaleWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				cl := clients[i%len(clients)]
				tool := tools[(i+i/len(clients))%len(tools)]
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
					err = fmt.Errorf("isError result: %s", harness.ResultText(res))
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
		}()
	}
	interval := time.Second / time.Duration(c.ScaleRate)
	start := time.Now()
	lastProgress := start
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if due.Sub(start) >= c.ScaleDuration || time.Since(start) >= c.ScaleDuration {
			break
		}
		if wait := time.Until(due); wait > 0 && !sleepCtx(ctx, wait) {
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
			c.progress("scale: %.0fs of %v, %d calls, %d errors", time.Since(start).Seconds(), c.ScaleDuration, nCalls.Load(), nErrs.Load())
		}
	}
	close(jobs)
	wg.Wait()
	out.elapsed = time.Since(start)
	for _, l := range lat {
		out.lat = append(out.lat, l...)
	}
	out.errors, out.unanswered = int(nErrs.Load()), int(nUnanswered.Load())
	return out
}
