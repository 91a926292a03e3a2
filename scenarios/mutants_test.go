package scenarios_test

// Mutants: deliberately broken gateways that prove the suite can fail.
// Each test runs one scenario against a mutant with runner.Run (the
// same runner `chaos run` uses: a fresh Gomega whose fail handler records
// the failure) and asserts that the scenario FAILS, and fails for the
// reason the mutant introduces.

import (
	"cmp"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// scenario returns the catalogue scenario named name.
func scenario(t *testing.T, name string) scenarios.Scenario {
	t.Helper()
	for _, s := range scenarios.Catalogue() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no scenario %q in the catalogue", name)
	return scenarios.Scenario{}
}

// expectFails runs the scenario against target and fails the test unless
// the scenario failed, every check named in failed failed (and is named
// in the reason), and every check named in passed passed: the scenario
// went on after the failure, judging the rest.
// The run is shared (runShared) with the other tests that run the same
// scenario against the same target.
func expectFails(t *testing.T, name string, target targets.Target, failed, passed []string) *history.Recorder {
	t.Helper()
	sc := scenario(t, name)
	rec := runShared(t, target, sc)[0]
	// An inconclusive run (a premise did not hold on a loaded machine)
	// shows no mutant's failure: run again, premiseAttempts in all.
	for attempt := 2; attempt <= premiseAttempts && rec.Result().Verdict == history.VerdictInconclusive; attempt++ {
		t.Logf("%s against %s came back inconclusive (%s): attempt %d", name, target.Name(), rec.Result().Reason, attempt)
		rec = runScenario(context.Background(), sc, runner.RunConfig{Target: target, CheckLeaks: true})
	}
	judgeFails(t, rec, target, failed, passed)
	return rec
}

// expectFailsScenario is expectFails with the scenario given (its own
// run: sc may differ from the catalogue's).
func expectFailsScenario(t *testing.T, sc scenarios.Scenario, target targets.Target, failed, passed []string) *history.Recorder {
	t.Helper()
	rec := runScenario(context.Background(), sc, runner.RunConfig{Target: target})
	judgeFails(t, rec, target, failed, passed)
	return rec
}

// judgeFails is expectFails's verdict on rec, a run against target.
func judgeFails(t *testing.T, rec *history.Recorder, target targets.Target, failed, passed []string) {
	t.Helper()
	res := rec.Result()
	name := res.Name
	nFailed, judged := res.CheckCounts()
	t.Logf("%s against %s: %s (%d/%d checks failed) in %s: %s", name, target.Name(), res.Verdict, nFailed, judged, res.Duration.D(), firstLine(res.Reason))
	if res.Verdict != history.VerdictFailed {
		t.Fatalf("%s against the mutant %s: verdict %s, want failed", name, target.Name(), res.Verdict)
	}
	verdicts, observed := map[string]history.CheckVerdict{}, map[string]string{}
	for _, c := range res.Checks {
		verdicts[c.Name], observed[c.Name] = c.Verdict, cmp.Or(c.Observed, c.Reason)
	}
	for _, w := range failed {
		if verdicts[w] != history.CheckFailed {
			t.Errorf("%s against %s: check %q is %q, want failed", name, target.Name(), w, verdicts[w])
		}
		if !strings.Contains(firstLine(res.Reason), w) {
			t.Errorf("%s against %s: the reason does not name the failed check %q: %s", name, target.Name(), w, firstLine(res.Reason))
		}
	}
	for _, w := range passed {
		// Inconclusive is no failure: the machine too slow to judge it
		// (kit.OverBound), said in the log.
		if verdicts[w] == history.CheckInconclusive {
			t.Logf("%s against %s: check %q is inconclusive (want passed): %s", name, target.Name(), w, observed[w])
			continue
		}
		if verdicts[w] != history.CheckPassed {
			t.Errorf("%s against %s: check %q is %q, want passed (the scenario goes on after a failed check): %s", name, target.Name(), w, verdicts[w], observed[w])
		}
	}
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// TestMutantNoErrorWrapping: a gateway whose errors do not name the
// backend (it strips `backend "x" unavailable:` and the vmcp _meta and
// JSON-RPC error data) fails the wrapping scenario.
func TestMutantNoErrorWrapping(t *testing.T) {
	t.Parallel()
	expectFails(t, "wrapping/legacy/streamable-http", &stripNamesTarget{inner: targets.Reference{TargetName: "mutant-no-wrapping"}},
		[]string{"crash: tools/call names beta", "403: resources/read names beta", "timeout: prompts/get names beta", "all down: beta's error names beta within 1 s"},
		[]string{"crash: alpha unaffected (tools, resources, prompts)", "crash: beta answers once cleared", "beta's own isError passes through unchanged"})
}

// noDeadlineMutant is the reference with an hour-long call timeout: it
// waits for a stalled backend until the client's own deadline.
var noDeadlineMutant = targets.Reference{TargetName: "mutant-no-deadline", Configure: func(cfg *vmcp.Config) { cfg.Timeouts.Call = time.Hour }}

// TestMutantNoCallDeadline: a gateway that ignores its configured call
// timeout (it waits an hour for a backend) fails the hang scenario: the
// first stall is still pending when the bound passes.
func TestMutantNoCallDeadline(t *testing.T) {
	t.Parallel()
	expectFails(t, "hang/legacy/streamable-http", noDeadlineMutant,
		[]string{"stall_before_headers: fails within call timeout + 1 s", "stall_mid_body: fails within call timeout + 1 s"},
		[]string{"403_after_initialize: fails within 1 s", "stall_before_headers: alpha unaffected", "stall_mid_body: beta answers once cleared (at most 0 failed calls)"})
}

// TestMutantNoBreaker: a gateway that declares a circuit breaker but never
// opens it (the breaker is switched off under the scenario's feet) fails
// the breaker scenario: "opens", its promise. The checks of an open
// circuit are inconclusive, never passed: it was never seen open. (A Gate
// that always admits is no such mutant: the reference chains the
// configured Gate before its own breaker.)
func TestMutantNoBreaker(t *testing.T) {
	t.Parallel()
	target := targets.Reference{TargetName: "mutant-no-breaker", Configure: func(cfg *vmcp.Config) { cfg.Breaker.Enabled = false }}
	res := expectFails(t, "breaker/legacy/streamable-http", target,
		[]string{"the circuit opens after 3 failed calls"},
		[]string{"failing call 1 names beta", "alpha unaffected while beta's circuit is open"})
	for _, name := range []string{"while open, calls do not reach beta", "while open, calls fail fast naming beta", "the trial call in half-open succeeds"} {
		if v := verdictOf(res.Result(), name); v != history.CheckInconclusive {
			t.Errorf("%q is %s on a breaker never seen open, want inconclusive", name, v)
		}
	}
}

// TestOtherWordingPasses is the converse of the no-wrapping mutant: a
// gateway that does name the failing backend, in its own words (`upstream
// beta failed: ...`, no vmcp _meta, no error data), passes the wrapping
// scenario. The scenarios hold a gateway to naming the backend, not to our
// phrasing.
func TestOtherWordingPasses(t *testing.T) {
	t.Parallel()
	sc := scenario(t, "wrapping/modern/streamable-http")
	target := &stripNamesTarget{inner: targets.Reference{TargetName: "other-wording"}, rewrite: rewordNames}
	cfg := runner.RunConfig{Target: target}
	rec := againIfInconclusive(t, context.Background(), sc, cfg, runScenario(context.Background(), sc, cfg))
	res := rec.Result()
	t.Logf("%s against %s: %s in %s: %s", sc.Name, target.Name(), res.Verdict, res.Duration.D(), res.Reason)
	if res.Verdict != history.VerdictPassed {
		t.Fatalf("a gateway naming the backend in other words: %s %s", res.Verdict, res.Reason)
	}
	// The proxy did rewrite: the recorded errors carry its wording and no
	// vmcp _meta.
	reworded := 0
	for _, c := range rec.Calls() {
		if c.Outcome == history.OutcomeBackendUnavailable {
			if strings.Contains(c.Error, `backend "`) || c.Meta[history.MetaBackend] != nil {
				t.Fatalf("not rewritten: %+v", c)
			}
			if strings.HasPrefix(c.Error, "upstream ") || strings.Contains(c.Error, ": upstream ") {
				reworded++
			}
		}
	}
	if reworded < 10 {
		t.Fatalf("only %d reworded unavailable calls", reworded)
	}
}

// stripNamesTarget is a mutant gateway: the reference vMCP behind a
// proxy that rewrites every JSON-RPC message it returns (stripNames by
// default: the backend's name goes from every error).
type stripNamesTarget struct {
	inner   targets.Reference
	rewrite func([]byte) []byte
}

func (m *stripNamesTarget) Name() string                       { return m.inner.Name() }
func (m *stripNamesTarget) Capabilities() targets.Capabilities { return m.inner.Capabilities() }

func (m *stripNamesTarget) Start(ctx context.Context, topo targets.TopologyInfo) (targets.Gateway, error) {
	gw, err := m.inner.Start(ctx, topo)
	if err != nil {
		return nil, err
	}
	rewrite := m.rewrite
	if rewrite == nil {
		rewrite = stripNames
	}
	return startProxy(ctx, gw, proxyRewrites{response: rewrite})
}

var backendNameRE = regexp.MustCompile(`backend "[^"]+" (unavailable|error)`)

var unavailableNameRE = regexp.MustCompile(`backend "([^"]+)" unavailable`)

// stripNames rewrites one JSON-RPC message: error texts lose the
// backend's name, results lose _meta, errors lose data.
func stripNames(msg []byte) []byte {
	return rewriteMessage(msg, func(text string) string { return backendNameRE.ReplaceAllString(text, "upstream $1") })
}

// rewordNames rewrites one JSON-RPC message as another gateway might
// word it: `backend "beta" unavailable` becomes `upstream beta failed`,
// results lose _meta, errors lose data.
func rewordNames(msg []byte) []byte {
	return rewriteMessage(msg, func(text string) string { return unavailableNameRE.ReplaceAllString(text, "upstream $1 failed") })
}

// rewriteMessage applies reword to a JSON-RPC message's error texts
// (result content and error message) and drops _meta and error data.
func rewriteMessage(msg []byte, reword func(string) string) []byte {
	var m map[string]any
	if json.Unmarshal(msg, &m) != nil {
		return msg
	}
	if res, ok := m["result"].(map[string]any); ok {
		delete(res, "_meta")
		if content, ok := res["content"].([]any); ok {
			for _, c := range content {
				if cm, ok := c.(map[string]any); ok {
					if text, ok := cm["text"].(string); ok {
						cm["text"] = reword(text)
					}
				}
			}
		}
	}
	if e, ok := m["error"].(map[string]any); ok {
		delete(e, "data")
		if text, ok := e["message"].(string); ok {
			e["message"] = reword(text)
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}
