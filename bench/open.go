package bench

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"golang.org/x/sync/errgroup"
)

// openOnce opens a legacy session at url (initialize + initialized), lists
// its tools, and closes it (not timed).
func openOnce(ctx context.Context, url string, timeout time.Duration) (initialize, total time.Duration, cl *history.Client, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t0 := time.Now()
	cl, err = history.Dial(ctx, url, history.RevisionLegacy, nil, history.WithCallTimeout(timeout), history.WithCloseGrace(time.Second))
	initialize = time.Since(t0)
	if err != nil {
		return initialize, 0, nil, err
	}
	if _, err = cl.MCP().ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		closeClients([]*history.Client{cl})
		return initialize, 0, nil, fmt.Errorf("tools/list at %s: %w", url, err)
	}
	return initialize, time.Since(t0), cl, nil
}

// opens opens n sessions one after another and returns the median
// initialize and initialize+tools/list times.
func opens(ctx context.Context, url string, n int, timeout time.Duration) (initialize, total time.Duration, err error) {
	var ini, tot []time.Duration
	for range n {
		i, t, cl, err := openOnce(ctx, url, timeout)
		if err != nil {
			return 0, 0, err
		}
		closeClients([]*history.Client{cl})
		ini, tot = append(ini, i), append(tot, t)
	}
	return median(ini), median(tot), nil
}

// openFigures measures session opens at the gateway against opening a
// session at its first backend directly.
func openFigures(ctx context.Context, c *Config, t *topology, rec *history.Recorder) error {
	// Interleave direct and gateway, a few opens at a time, so load
	// changes on the machine hit both alike.
	var dI, dT, gI, gT []time.Duration
	for done := 0; done < c.Opens; done += 5 {
		n := min(5, c.Opens-done)
		i, tt, err := opens(ctx, t.backends[0].URL(), n, c.CallTimeout)
		if err != nil {
			return fmt.Errorf("direct: %w", err)
		}
		dI, dT = append(dI, i), append(dT, tt)
		i, tt, err = opens(ctx, t.gateway.MCPURL(), n, c.CallTimeout)
		if err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
		gI, gT = append(gI, i), append(gT, tt)
	}
	set := rec.SetFigure
	set("backends", float64(len(t.backends)))
	set("opens", float64(c.Opens))
	set("direct.initialize_ms", ms(median(dI)))
	set("direct.open_ms", ms(median(dT)))
	set("gateway.initialize_ms", ms(median(gI)))
	set("gateway.open_ms", ms(median(gT)))
	set("ratio.initialize", float64(median(gI))/float64(max(median(dI), 1)))
	set("ratio.open", float64(median(gT))/float64(max(median(dT), 1)))
	c.progress("%s: initialize direct %.2fms gateway %.2fms (%.1f×); initialize+tools/list direct %.2fms gateway %.2fms (%.1f×)",
		rec.Name(), ms(median(dI)), ms(median(gI)), float64(median(gI))/float64(max(median(dI), 1)),
		ms(median(dT)), ms(median(gT)), float64(median(gT))/float64(max(median(dT), 1)))
	return nil
}

// manySessions opens c.Sessions legacy sessions at the gateway, 16 at a
// time, keeps them all open, and reports the wall time and the gateway's
// RSS, then closes them.
func manySessions(ctx context.Context, c *Config, t *topology, rec *history.Recorder) error {
	gpid := pidOf(t.gateway)
	stopCPU := startCPU(gpid)
	clients, errs, wall := openSessions(ctx, t.gateway.MCPURL(), c.Sessions, c.CallTimeout)
	cpu, now := stopCPU()
	defer closeClients(clients)
	failed := c.Sessions - len(liveClients(clients)) // a failed open leaves nil
	rec.SetFigure("sessions", float64(c.Sessions))
	rec.SetFigure("gateway.open_all_s", wall.Seconds())
	rec.SetFigure("errors", float64(failed))
	if cpu[0] >= 0 {
		rec.SetFigure("gateway.cpu_s", cpu[0].Seconds())
		rec.SetFigure("gateway.rss_mb", float64(now[0].RSS)/(1<<20))
		rec.SetFigure("gateway.rss_peak_mb", float64(now[0].PeakRSS)/(1<<20))
	}
	c.progress("%d sessions opened (initialize + tools/list, 16 at a time) in %.2fs, %d failed; gateway RSS %.0f MB",
		c.Sessions, wall.Seconds(), failed, float64(now[0].RSS)/(1<<20))
	if failed > 0 {
		return fmt.Errorf("%d of %d sessions failed to open; first: %v", failed, c.Sessions, cmp.Or(errs...))
	}
	return nil
}

// openSessions opens n legacy sessions at url, 16 at a time (each open
// bounded by timeout), and returns them (nil where the open failed), the
// errors, and the wall time.
func openSessions(ctx context.Context, url string, n int, timeout time.Duration) ([]*history.Client, []error, time.Duration) {
	clients := make([]*history.Client, n)
	errs := make([]error, n)
	var g errgroup.Group
	g.SetLimit(16)
	t0 := time.Now()
	for i := range clients {
		if ctx.Err() != nil {
			errs[i] = ctx.Err()
			continue
		}
		g.Go(func() error {
			_, _, clients[i], errs[i] = openOnce(ctx, url, timeout)
			return nil
		})
	}
	_ = g.Wait()
	return clients, errs, time.Since(t0)
}

// runOpen500 starts four backends of 500 tools each behind the gateway
// and measures session opens.
func runOpen500(ctx context.Context, c *Config, results *history.Results) error {
	c.progress("starting 4 backends × 500 tools and %s", c.Target.Name())
	t, err := c.start(ctx, c.CallTimeout, c.echoScript("b1", 500), c.echoScript("b2", 500), c.echoScript("b3", 500), c.echoScript("b4", 500))
	if err != nil {
		return err
	}
	defer t.close()
	return record(ctx, results, "bench/open/4x500-tools", "open", func(rec *history.Recorder) error {
		return openFigures(ctx, c, t, rec)
	})
}
