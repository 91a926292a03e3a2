package runner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// TestLeakCheckPerScenario: scenarios run at once each check their own
// goroutines. One leaves a goroutine (started by a goroutine it started)
// running past its teardown: it fails, naming the leaked stack; the one
// beside it, which runs as long and leaks nothing, passes.
func TestLeakCheckPerScenario(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	leaker := leakScenario("leaks/legacy/streamable-http", func() {
		go func() {
			go func() { <-release }()
			<-release
		}()
	})
	clean := leakScenario("clean/legacy/streamable-http", func() {})
	recs := runner.RunPool(context.Background(), []runner.Scenario{leaker, clean},
		runner.RunConfig{CheckLeaks: true}, 2, func(int, *history.Recorder) {})
	leaked, passed := recs[0].Result(), recs[1].Result()
	t.Logf("leaker: %s: %s", leaked.Verdict, leaked.Reason)
	if leaked.Verdict != history.VerdictFailed || !strings.Contains(leaked.Reason, "no goroutine leaked") ||
		!strings.Contains(leaked.Reason, "TestLeakCheckPerScenario") {
		t.Errorf("the leaking scenario: %s: %s; want failed on its leak check, naming the stack", leaked.Verdict, leaked.Reason)
	}
	if passed.Verdict != history.VerdictPassed {
		t.Errorf("the scenario beside it: %s: %s; want passed", passed.Verdict, passed.Reason)
	}
}

// leakScenario is a scenario that calls alpha, runs start, and calls
// alpha again a little later (so that two of them overlap).
func leakScenario(name string, start func()) runner.Scenario {
	return alphaThen(name, func(k *kit.Kit, c *history.Client) {
		start()
		time.Sleep(200 * time.Millisecond) // overlap the other scenario
		k.CheckOK("alpha answers again", c.CallTool(k.Ctx, k.Tool(kit.Alpha, "echo"), kit.EchoArgs("y")))
	})
}

// alphaThen is a scenario on two streamable-HTTP backends that checks
// "alpha answers" on a legacy client, then runs then.
func alphaThen(name string, then func(k *kit.Kit, c *history.Client)) runner.Scenario {
	return runner.Scenario{
		Name: name, Group: strings.Split(name, "/")[0], Timeout: 30 * time.Second,
		Topology: func() harness.Topology {
			return harness.Topology{Backends: kit.TwoBackends(fakebackends.TransportStreamableHTTP)}
		},
		Run: func(ctx context.Context, env *harness.Env, g gomega.Gomega) {
			k := kit.New(ctx, env, g)
			c := k.Client(history.RevisionLegacy)
			k.CheckOK("alpha answers", c.CallTool(ctx, k.Tool(kit.Alpha, "echo"), kit.EchoArgs("x")))
			then(k, c)
		},
	}
}
