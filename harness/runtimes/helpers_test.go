package runtimes_test

import (
	"context"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, runtimes.LeakOptions()...)
}

// script returns a small healthy script named name.
func script(name string, transport fakebackends.Transport, faults ...faults.Fault) *fakebackends.Script {
	return &fakebackends.Script{
		Name: name, Transport: transport, Protocol: fakebackends.ProtocolAuto,
		Tools: []fakebackends.ToolSpec{
			{Name: "echo", Description: "Echo", Input: map[string]any{"type": "object", "properties": map[string]any{"msg": map[string]any{"type": "string"}}}},
			{Name: "slow", Description: "Slow", Result: fakebackends.ToolResult{Text: "done"}},
		},
		Resources: []fakebackends.ResourceSpec{{URI: "mem://" + name + "/readme", Text: "hello"}},
		Prompts:   []fakebackends.PromptSpec{{Name: "greet", Text: "Hello from " + name}},
		Faults:    faults,
	}
}

func chaosBin(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin, err := runtimes.BuildChaos(ctx)
	if err != nil {
		t.Fatalf("BuildChaos: %v", err)
	}
	return bin
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// startBackend starts a backend on rt and closes it when the test ends.
func startBackend(t *testing.T, rt runtimes.BackendRuntime, s *fakebackends.Script) runtimes.RunningBackend {
	t.Helper()
	b, err := rt.Start(ctxT(t, 30*time.Second), s)
	if err != nil {
		t.Fatalf("start %s on %s: %v", s.Name, rt.Name(), err)
	}
	t.Cleanup(func() {
		if err := b.Close(context.Background()); err != nil {
			t.Errorf("close %s: %v", s.Name, err)
		}
	})
	return b
}

// dialBackend connects a recorded client straight to a backend.
func dialBackend(t *testing.T, b runtimes.RunningBackend, rev history.Revision, rec *history.Recorder, opts ...history.ClientOption) *history.Client {
	t.Helper()
	c, err := history.Dial(ctxT(t, 10*time.Second), b.URL(), rev, rec, opts...)
	if err != nil {
		t.Fatalf("dial %s: %v", b.Name(), err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func readFile(p string) ([]byte, error) { return os.ReadFile(p) }

// failFast bounds a call that must fail without waiting for a deadline
// (refused, 403, a dead process): half the 10 s call timeout. It catches a
// call that hung until its deadline; how long such calls take is logged,
// since on a loaded machine (-race, load average 15 on 2 cores) "at once"
// took over a second.
const failFast = history.DefaultCallTimeout / 2
