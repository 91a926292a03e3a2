package runner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// TestHarnessActionAbortIsInconclusive: a body that ends because the
// harness could not do its own part (set a fault on a backend it does not
// have) is no verdict on the gateway: inconclusive, the abort filed as an
// inconclusive check naming the action and the harness's error, the check
// judged before it kept. A failed check before it still fails the
// scenario; a failed assertion on the gateway's answer still fails it. A
// backend log the harness cannot read (kit.ReadLog) ends it inconclusive
// too, never read as "nothing arrived".
func TestHarnessActionAbortIsInconclusive(t *testing.T) {
	t.Parallel()
	noFault := faults.Fault{Kind: faults.KindLatency, Params: &faults.Latency{Delay: fakebackends.Duration(time.Second)}}
	harnessFails := alphaThen("harness/legacy/streamable-http", func(k *kit.Kit, c *history.Client) {
		k.SetFaults("nosuchbackend", noFault)
	})
	failedFirst := alphaThen("failedfirst/legacy/streamable-http", func(k *kit.Kit, c *history.Client) {
		k.Check("a check that fails", func(ck *kit.C) { ck.Expect(1).To(gomega.Equal(2)) })
		k.SetFaults("nosuchbackend", noFault)
	})
	gatewayFails := alphaThen("gateway/legacy/streamable-http", func(k *kit.Kit, c *history.Client) {
		call := c.CallTool(k.Ctx, "no-such-tool-anywhere", kit.EchoArgs("x"))
		k.G.Expect(call.Outcome).To(gomega.Equal(history.OutcomeOK), "the gateway answers")
	})
	unreadLog := alphaThen("unreadlog/legacy/streamable-http", func(k *kit.Kit, c *history.Client) {
		k.Check("something about a backend's log", func(ck *kit.C) {
			ck.Expect(kit.ReadLog(k.Ctx, k.Env, "nosuchbackend")).To(gomega.BeEmpty(), "nothing arrived")
		})
	})
	recs := runner.RunPool(context.Background(), []runner.Scenario{harnessFails, failedFirst, gatewayFails, unreadLog},
		runner.RunConfig{}, 4, func(int, *history.Recorder) {})

	res := recs[0].Result()
	t.Logf("harness: %s: %s", res.Verdict, res.Reason)
	if res.Verdict != history.VerdictInconclusive {
		t.Errorf("a harness action that failed: %s (%s), want inconclusive", res.Verdict, res.Reason)
	}
	var abort *history.Check
	for i, c := range res.Checks {
		if strings.HasPrefix(c.Name, "scenario ran to the end (aborted at harnessabort_test.go:") {
			abort = &res.Checks[i]
		}
		if c.Name == "alpha answers" && c.Verdict != history.CheckPassed {
			t.Errorf("the check before the abort: %s, want passed (kept)", c.Verdict)
		}
	}
	switch {
	case abort == nil:
		t.Errorf("no abort check naming the scenario's line: %v", res.Checks)
	case abort.Verdict != history.CheckInconclusive || !strings.Contains(abort.Reason, "could not set faults on nosuchbackend") ||
		!strings.Contains(abort.Reason, "nosuchbackend"):
		t.Errorf("the abort check: %s %q, want inconclusive naming the action and the error", abort.Verdict, abort.Reason)
	}
	if res := recs[1].Result(); res.Verdict != history.VerdictFailed || !strings.Contains(res.Reason, "a check that fails") {
		t.Errorf("a failed check, then a harness abort: %s (%s), want failed by the check", res.Verdict, res.Reason)
	}
	if res := recs[3].Result(); res.Verdict != history.VerdictInconclusive || !strings.Contains(res.Reason, "could not read nosuchbackend's request log") {
		t.Errorf("a backend log the harness cannot read: %s (%s), want inconclusive, never read as an empty log", res.Verdict, res.Reason)
	}
	if res := recs[2].Result(); res.Verdict != history.VerdictFailed || !strings.Contains(res.Reason, "the gateway answers") {
		t.Errorf("an assertion on the gateway's answer: %s (%s), want failed", res.Verdict, res.Reason)
	}
}
