package harness

import (
	"context"
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

var http403 = faults.Fault{Kind: faults.KindHTTPStatus, Match: faults.Match{Method: "tools/call"}, Params: &faults.HTTPStatus{Status: 403, Body: &faults.Body{Text: "Forbidden"}}}

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

func startEnv(t *testing.T, topo Topology) *Env {
	t.Helper()
	env, err := Start(ctxT(t, 60*time.Second), topo)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Close(context.Background()); err != nil {
			t.Errorf("env.Close: %v", err)
		}
	})
	return env
}

// failFast bounds a call that must fail without waiting for a deadline
// (refused, 403, a dead process): half the 10 s call timeout. It catches a
// call that hung until its deadline; how long such calls take is logged,
// since on a loaded machine (-race, load average 15 on 2 cores) "at once"
// took over a second.
const failFast = history.DefaultCallTimeout / 2
