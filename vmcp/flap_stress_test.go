package vmcp_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

const stressBeta = `
name: beta
protocol: auto
tools:
  - {name: echo}
`

const stressDelta = `
name: delta
transport: sse
protocol: legacy
tools:
  - {name: echo}
`

// TestFlappingBackendsNeverPanic opens sessions (sessionful and stateless)
// and calls tools concurrently while both backends restart over and over.
// Every failure must be a classified backend error; a panic (in the
// gateway, or recovered by mcp-go in a tool handler) fails the test.
// Statistical: the race it guards needs the loaded machine's interleavings.
func TestFlappingBackendsNeverPanic(t *testing.T) {
	t.Parallel()
	const base = "timeouts: {initialize: 2s, call: 2s, list: 2s, close: 300ms}\npool: {size: 2}\n"
	for name, extra := range map[string]string{
		"plain":     "",
		"optimizer": "optimizer: {enabled: true}\nhealth: {interval: 150ms, timeout: 100ms, unhealthyThreshold: 2}\nnotifications: {listChanged: true}\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			flapAndCall(t, base+extra, extra != "")
		})
	}
}

func flapAndCall(t *testing.T, cfg string, optimizer bool) {
	beta := startFake(t, stressBeta)
	delta := startFake(t, stressDelta)
	panicLog := &panicLogs{}
	g := startGateway(t, gwConfig(cfg, beta, delta), vmcp.WithLogger(slog.New(panicLog)))

	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the flapping
		defer wg.Done()
		for i := 0; ctx.Err() == nil && i < 200; i++ {
			rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
			if i%3 == 2 {
				beta.Stop() // refused while stopped: dials fail half-way
				delta.Stop()
				time.Sleep(10 * time.Millisecond)
			}
			_ = beta.Restart(rctx)
			_ = delta.Restart(rctx)
			rcancel()
			time.Sleep(time.Duration(5+i%20) * time.Millisecond)
		}
	}()
	var mu sync.Mutex
	var panics []string
	report := func(s string) {
		if strings.Contains(s, "panic") {
			mu.Lock()
			panics = append(panics, s)
			mu.Unlock()
		}
	}
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil && i < 40; i++ {
				c, err := tryConnect(g.URL(), (w+i)%2 == 0)
				if err != nil {
					report(err.Error())
					continue
				}
				for _, tool := range []string{"beta_echo", "delta_echo"} {
					cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
					req := mcp.CallToolRequest{}
					req.Params.Name = tool
					if optimizer {
						req.Params.Name = "call_tool"
						req.Params.Arguments = map[string]any{"tool_name": tool, "parameters": map[string]any{}}
					}
					res, err := c.CallTool(cctx, req)
					ccancel()
					if err != nil {
						report(err.Error())
					} else if res.IsError {
						report(resultText(res))
					}
				}
				_ = c.Close()
			}
		}()
	}
	wg.Wait()
	if len(panics) > 0 {
		t.Errorf("%d panics reached the client, first: %s", len(panics), panics[0])
	}
	if n, first := panicLog.get(); n > 0 {
		t.Errorf("%d backend requests panicked inside the MCP client (made backend errors), first: %s", n, first)
	}
}

// panicLogs counts the gateway's "backend request panicked" log records.
type panicLogs struct {
	mu    sync.Mutex
	n     int
	first string
}

func (h *panicLogs) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h *panicLogs) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *panicLogs) WithGroup(string) slog.Handler                { return h }
func (h *panicLogs) Handle(_ context.Context, r slog.Record) error {
	if !strings.Contains(r.Message, "panicked") {
		return nil
	}
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		h.first = b.String()
	}
	h.n++
	return nil
}

func (h *panicLogs) get() (int, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n, h.first
}
