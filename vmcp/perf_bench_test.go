package vmcp_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// The call path and session open, for profiling (issue 16):
//
//	go test -run '^$' -bench 'CallPath|SessionOpen' -benchmem -cpuprofile cpu.out ./vmcp/
//
// Each benchmark has a direct sub-benchmark (the same client work against
// the backend itself) to compare with in the same run. Client, gateway and
// backend share the process: ns/op and allocs/op are of all three, so the
// gateway's share is gateway minus direct.

// benchBackend starts an in-process fake backend named name with an echo
// tool and tools-1 more, stopped when b ends.
func benchBackend(b *testing.B, name string, tools int) *fakebackends.Backend {
	b.Helper()
	s := &fakebackends.Script{Name: name, Tools: []fakebackends.ToolSpec{{Name: "echo", Description: "Echo",
		Input: map[string]any{"type": "object", "properties": map[string]any{"msg": map[string]any{"type": "string"}}}, Result: fakebackends.ToolResult{Echo: true}}}}
	if tools > 1 {
		s.Tools = append(s.Tools, benchTools(tools-1)...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fb, err := fakebackends.Start(ctx, s)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = fb.Close() })
	return fb
}

// benchGatewayFor starts a gateway in front of backends, shut down when b
// ends.
func benchGatewayFor(b *testing.B, backends ...*fakebackends.Backend) *vmcp.Gateway {
	b.Helper()
	cfg, err := vmcp.ParseConfig([]byte(gwConfig("timeouts: {initialize: 30s, call: 10s, list: 30s}\n", backends...)), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	g, err := vmcp.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := g.Start(ctx, "127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = g.Shutdown(ctx)
	})
	return g
}

func benchCall(b *testing.B, c *client.Client, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = map[string]any{"msg": "hello"}
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError {
		b.Fatalf("call %s: %v %s", name, err, resultText(res))
	}
}

// BenchmarkCallPath is one healthy tools/call, sequential, on each
// revision: direct to the backend, then through the gateway.
func BenchmarkCallPath(b *testing.B) {
	fb := benchBackend(b, "alpha", 1)
	g := benchGatewayFor(b, fb)
	for _, rev := range revisions {
		for _, ep := range []struct{ name, url, tool string }{{"direct", fb.URL(), "echo"}, {"gateway", g.URL(), "alpha_echo"}} {
			b.Run(rev.name+"/"+ep.name, func(b *testing.B) {
				c, err := tryConnect(ep.url, rev.modern)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				benchCall(b, c, ep.tool) // a stateless client's pool opens on first use
				b.ReportAllocs()
				for b.Loop() {
					benchCall(b, c, ep.tool)
				}
			})
		}
	}
}

// BenchmarkCallPathParallel is the same with concurrent callers (one client
// per goroutine), where lock contention shows.
func BenchmarkCallPathParallel(b *testing.B) {
	fb := benchBackend(b, "alpha", 1)
	g := benchGatewayFor(b, fb)
	for _, rev := range revisions {
		for _, ep := range []struct{ name, url, tool string }{{"direct", fb.URL(), "echo"}, {"gateway", g.URL(), "alpha_echo"}} {
			b.Run(rev.name+"/"+ep.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					c, err := tryConnect(ep.url, rev.modern)
					if err != nil {
						b.Error(err)
						return
					}
					defer c.Close()
					for pb.Next() {
						benchCall(b, c, ep.tool)
					}
				})
			})
		}
	}
}

// openSession opens a legacy session (initialize, tools/list) and closes
// it.
func openSession(b *testing.B, url string, initOnly bool) {
	c, err := tryConnect(url, false)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if initOnly {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSessionOpen opens legacy sessions: 2 backends (initialize +
// tools/list) and 4 backends × 500 tools (initialize alone), direct (one
// backend) and through the gateway.
func BenchmarkSessionOpen(b *testing.B) {
	for _, tc := range []struct {
		backends, tools int
		initOnly        bool
	}{{2, 1, false}, {4, 500, true}} {
		var fbs []*fakebackends.Backend
		for i := range tc.backends {
			fbs = append(fbs, benchBackend(b, fmt.Sprintf("b%d", i+1), tc.tools))
		}
		g := benchGatewayFor(b, fbs...)
		name := fmt.Sprintf("%dx%d", tc.backends, tc.tools)
		b.Run(name+"/direct", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				openSession(b, fbs[0].URL(), tc.initOnly)
			}
		})
		b.Run(name+"/gateway", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				openSession(b, g.URL(), tc.initOnly)
			}
		})
	}
}
