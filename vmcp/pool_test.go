package vmcp_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
)

// TestPoolReconnectsUnderLoad: modern (stateless) clients call through the
// shared pool while the backend restarts, so pool members re-initialize
// (slowly: beta's initialize takes 300 ms) while other requests pick
// members and list (run with -race). After the churn every call succeeds
// again, and the pool did re-initialize.
func TestPoolReconnectsUnderLoad(t *testing.T) {
	t.Parallel()
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	if err := b.SetFaults(faults.Fault{Kind: faults.KindLatency, Match: faults.Match{Method: "initialize"}, Params: &faults.Latency{Delay: fakebackends.Duration(300 * time.Millisecond)}}); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, gwConfig(faultTimeouts+"pool: {size: 3}\n", a, b))
	const workers = 6
	clients := make([]*client.Client, workers)
	for i := range clients {
		clients[i] = connect(t, g.URL(), true)
	}
	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		calls    atomic.Int64
		failures atomic.Int64
	)
	for i, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tool := []string{"beta_echo", "alpha_echo", "beta_echo"}[i%3]
			for !stop.Load() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				var err error
				if i == 0 {
					// Listing makes the pool look for backends to reconnect.
					_, err = cl.ListTools(ctx, mcp.ListToolsRequest{})
				} else {
					req := mcp.CallToolRequest{}
					req.Params.Name = tool
					var res *mcp.CallToolResult
					res, err = cl.CallTool(ctx, req)
					if err == nil && res.IsError {
						err = errors.New(resultText(res))
					}
				}
				cancel()
				calls.Add(1)
				if err != nil {
					failures.Add(1)
				}
			}
		}()
	}
	for range 5 {
		before := calls.Load()
		testwait.For(t, 10*time.Second, "the condition", func() bool { return calls.Load() >= before+workers })
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := b.Restart(ctx)
		cancel()
		if err != nil {
			t.Fatalf("restart beta: %v", err)
		}
	}
	before := calls.Load()
	testwait.For(t, 10*time.Second, "the condition", func() bool { return calls.Load() >= before+workers })
	stop.Store(true)
	wg.Wait()
	t.Logf("%d calls during 5 restarts, %d failed", calls.Load(), failures.Load())

	for i, cl := range clients {
		tool := []string{"beta_echo", "alpha_echo", "beta_echo"}[i%3]
		if res, _ := callTool(t, cl, tool, nil); res.IsError {
			t.Errorf("%s after the restarts: %s", tool, resultText(res))
		}
	}
	reinits := 0
	for _, ms := range g.Status().Pool.Backends["beta"] {
		reinits += ms.Reinitializations
	}
	t.Logf("pool members of beta: %d, re-initializations: %d", len(g.Status().Pool.Backends["beta"]), reinits)
	if reinits == 0 {
		t.Error("no pool member re-initialized: the restarts were not exercised")
	}
}
