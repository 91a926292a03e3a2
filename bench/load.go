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
	"golang.org/x/sync/errgroup"
)

// LoadResult is what a load run measured. Latencies are of finished calls
// (failed ones included).
type LoadResult struct {
	Calls      int
	Errors     int
	FirstError string
	Elapsed    time.Duration
	Throughput float64 // calls per second
	P50, P99   time.Duration
	Max        time.Duration
}

// dialClients opens n clients on rev, each initialize bounded by timeout.
func dialClients(ctx context.Context, url string, rev history.Revision, n int, timeout time.Duration) ([]*history.Client, error) {
	clients := make([]*history.Client, n)
	errs := make([]error, n)
	var g errgroup.Group
	g.SetLimit(16)
	for i := range clients {
		g.Go(func() error {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			clients[i], errs[i] = history.Dial(cctx, url, rev, nil, history.WithCallTimeout(timeout),
				history.WithClientName(fmt.Sprintf("bench%d", i)), history.WithCloseGrace(time.Second))
			return nil
		})
	}
	_ = g.Wait()
	if err := errors.Join(errs...); err != nil {
		closeClients(clients)
		return nil, err
	}
	return clients, nil
}

// closeClients closes every client concurrently (each bounded by its close
// grace).
func closeClients(clients []*history.Client) {
	var g errgroup.Group
	g.SetLimit(32)
	for _, c := range clients {
		if c == nil {
			continue
		}
		g.Go(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			return c.Close(ctx)
		})
	}
	_ = g.Wait()
}

// runCalls is one bounded load run: each client calls tool (msg hello) in a
// loop until d has passed or calls calls have been made in all (0: no
// count bound), every call with its own callTimeout deadline.
func runCalls(ctx context.Context, clients []*history.Client, tool string, calls int, d, callTimeout time.Duration) LoadResult {
	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var issued atomic.Int64
	lat := make([][]time.Duration, len(clients))
	errs := make([]int, len(clients))
	first := make([]string, len(clients))
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range clients {
		wg.Go(func() {
			mc := c.MCP()
			for runCtx.Err() == nil {
				if calls > 0 && issued.Add(1) > int64(calls) {
					return
				}
				// The call's deadline is its own, not the run's: a call
				// in flight when the run ends is allowed to finish.
				cctx, ccancel := context.WithTimeout(ctx, callTimeout)
				t0 := time.Now()
				res, err := mc.CallTool(cctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: map[string]any{"msg": "hello"}}})
				d := time.Since(t0)
				ccancel()
				if ctx.Err() != nil {
					return
				}
				lat[i] = append(lat[i], d)
				if err == nil && res != nil && res.IsError {
					err = fmt.Errorf("isError result: %s", history.ResultText(res))
				}
				if err != nil {
					errs[i]++
					if first[i] == "" {
						first[i] = err.Error()
					}
				}
			}
		})
	}
	wg.Wait()
	r := LoadResult{Elapsed: time.Since(start)}
	var all []time.Duration
	for i := range clients {
		all = append(all, lat[i]...)
		r.Errors += errs[i]
		r.FirstError = cmp.Or(r.FirstError, first[i])
	}
	r.Calls = len(all)
	if r.Elapsed > 0 {
		r.Throughput = float64(r.Calls) / r.Elapsed.Seconds()
	}
	r.P50, r.P99, r.Max = quantiles(all)
	return r
}

// quantile returns the q-quantile of d (nearest rank; 1 is the maximum,
// 0 for no data).
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// quantiles returns the median, 99th percentile and maximum (nearest rank).
func quantiles(d []time.Duration) (p50, p99, mx time.Duration) {
	return quantile(d, 0.50), quantile(d, 0.99), quantile(d, 1)
}
