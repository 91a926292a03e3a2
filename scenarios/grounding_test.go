package scenarios_test

// Grounded verdicts: fixture gateways c–f (harness/internal/fixturegw,
// testdata/profiles) each reproduce one behaviour of a real gateway that
// once made the catalogue give false verdicts. Each is judged exactly:
// its real defects fail, what it was never asked is not applicable, and
// what the harness could not establish is inconclusive, never a pass.

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// recoveryCheck matches the names of the checks that judge a backend's
// recovery once a fault step ends (kit.CheckRecovery, Steady's "the
// session recovers from", load's last-recovery check).
var recoveryCheck = regexp.MustCompile(`answers once cleared|answers again|answers at the end|once every backend is cleared|the session recovers from|answers after the respawn|answers after SIGCONT|every session reaches beta after the last recovery|answers once the stall is cleared`)

// hangTimeoutFloor is well under the hang scenarios' 500 ms call timeout:
// a stall check judged on a call that reached the stalled backend took at
// least this long (one judged on a leftover local error takes ~1 ms).
const hangTimeoutFloor = 300 * time.Millisecond

// namingCheck matches the names of the checks that judge the error names
// the failing backend.
var namingCheck = regexp.MustCompile(`names? (beta|alpha)\b|failures name beta`)

// runFixture runs the scenario named name against the fixture profile,
// grounded unless ungrounded is set (a grounded run is shared: runShared).
func runFixture(t *testing.T, fixture, name string, ungrounded bool) history.ScenarioResult {
	t.Helper()
	sc := scenario(t, name)
	var res history.ScenarioResult
	if ungrounded {
		res = runScenario(kit.WithoutGrounding(context.Background()), sc, runner.RunConfig{Target: fixtureTarget(t, fixture), CheckLeaks: true}).Result()
	} else {
		res = runShared(t, fixtureTarget(t, fixture), sc)[0].Result()
	}
	t.Logf("%s against %s (grounded %v): %s in %s: %s", name, fixture, !ungrounded, res.Verdict, res.Duration.D(), res.Reason)
	return res
}

// runFixtures runs the scenarios named against the fixture profile, at
// once (runShared), for runFixture to read.
func runFixtures(t *testing.T, fixture string, names ...string) {
	t.Helper()
	scs := make([]scenarios.Scenario, len(names))
	for i, name := range names {
		scs[i] = scenario(t, name)
	}
	runShared(t, fixtureTarget(t, fixture), scs...)
}

// byVerdict lists the check names of each verdict.
func byVerdict(res history.ScenarioResult) map[history.CheckVerdict][]string {
	out := map[history.CheckVerdict][]string{}
	for _, c := range res.Checks {
		out[c.Verdict] = append(out[c.Verdict], c.Name)
	}
	return out
}

func verdictOf(res history.ScenarioResult, check string) history.CheckVerdict {
	for _, c := range res.Checks {
		if c.Name == check {
			return c.Verdict
		}
	}
	return ""
}

func TestGroundedFixtures(t *testing.T) {
	t.Parallel()
	buildFixtureGW(t)
	const (
		wrapping = "wrapping/legacy/streamable-http"
		hang     = "hang/legacy/streamable-http"
	)

	// (c) offers no resources: its resources checks are not applicable,
	// with the reason; everything else passes.
	t.Run("c", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		status := map[string]harness.ProfileCheck{}
		checks := harness.CheckTarget(ctx, fixtureTarget(t, "fixture-c"), nil)
		for _, c := range checks {
			status[c.Name] = c
		}
		if _, ok := status["advertised"]; !ok {
			t.Logf("profile check (no 'advertised' check): %+v", checks)
		}
		if c := status["advertised"]; !strings.Contains(c.Detail, "offers tools, prompts") {
			t.Errorf("profile check advertised: %+v", c)
		}
		if status["resources"].Status != history.CheckNotApplicable || status["prompts"].Status != history.CheckPassed {
			t.Errorf("profile check: resources %+v, prompts %+v", status["resources"], status["prompts"])
		}
		for _, name := range []string{wrapping, hang, "session/legacy/streamable-http"} {
			res := runFixture(t, "fixture-c", name, false)
			if res.Verdict != history.VerdictPassed {
				t.Errorf("%s: %s, want passed: %s", name, res.Verdict, res.Reason)
			}
			for _, c := range res.Checks {
				resources := strings.Contains(c.Name, "resources/read")
				lacks := c.Verdict == history.CheckNotApplicable && (strings.Contains(c.Reason, "lacks capability") || // its profile's capabilities
					strings.Contains(c.Reason, "keeps its backend sessions open") || // the initialize path
					strings.Contains(c.Reason, "a call of a tool it does not offer")) // the initialize path, at a client session's opening
				if resources != (c.Verdict == history.CheckNotApplicable) && !lacks {
					t.Errorf("%s: %q is %s (%s)", name, c.Name, c.Verdict, c.Reason)
				}
				if resources && !strings.Contains(c.Reason, "does not advertise resources") {
					t.Errorf("%s: %q not applicable for %q, want the capability named", name, c.Name, c.Reason)
				}
			}
		}
	})

	// (d) drops a backend for 500 ms after an error answer for it: it
	// fails naming checks (calls inside a fault's own window it answers
	// "not found" without naming beta) and recovery checks, nothing else;
	// the breaker it never fed is inconclusive, not failed.
	t.Run("d", func(t *testing.T) {
		t.Parallel()
		names := []string{wrapping, hang, "session/legacy/streamable-http", "breaker/legacy/streamable-http", "load/legacy/streamable-http", "restart/legacy/streamable-http"}
		runFixtures(t, "fixture-d", names...)
		for _, name := range names {
			res := runFixture(t, "fixture-d", name, false)
			// d drops beta for 500 ms after any error answer for it: under
			// load an earlier call's late error answer (seen: the timeout
			// window's) can drop beta just as the next window's call comes,
			// and it never reaches beta (inconclusive). Once more, then.
			if inc := byVerdict(res)[history.CheckInconclusive]; len(inc) > 0 && !strings.HasPrefix(name, "breaker/") {
				t.Logf("%s: inconclusive %q: running it once more", name, inc)
				res = runScenario(context.Background(), scenario(t, name), runner.RunConfig{Target: fixtureTarget(t, "fixture-d"), CheckLeaks: true}).Result()
			}
			v := byVerdict(res)
			for _, f := range v[history.CheckFailed] {
				if !recoveryCheck.MatchString(f) && !namingCheck.MatchString(f) {
					t.Errorf("%s: %q failed: neither a naming nor a recovery check", name, f)
				}
			}
			if name == wrapping && !slices.ContainsFunc(v[history.CheckFailed], recoveryCheck.MatchString) {
				t.Errorf("%s: no recovery check failed: %q", name, v[history.CheckFailed])
			}
			if inc := v[history.CheckInconclusive]; len(inc) > 0 && !strings.HasPrefix(name, "breaker/") {
				t.Errorf("%s: inconclusive %q", name, inc)
			}
			if strings.HasPrefix(name, "breaker/") {
				if verdictOf(res, "the circuit opens after 3 failed calls") != history.CheckInconclusive {
					t.Errorf("%s: the breaker (fed one failure of three) is judged: %v", name, v)
				}
			}
		}
	})

	// (e) is (d) plus it takes a wrong-id answer as the answer: it fails
	// what (d) fails plus the forged-answer and wrong-id checks, judged on
	// the first call of each fault window, which reaches beta.
	t.Run("e", func(t *testing.T) {
		t.Parallel()
		for name, extra := range map[string][]string{
			wrapping: {"forged-event: the forged answer never reaches the client", "forged-event: tools/call fails within call timeout + 1 s"},
			hang:     {"malformed_wrong_id: fails within 1 s"},
		} {
			res := runFixture(t, "fixture-e", name, false)
			failed := byVerdict(res)[history.CheckFailed]
			for _, x := range extra {
				if !slices.Contains(failed, x) {
					t.Errorf("%s: %q did not fail: %q", name, x, failed)
				}
			}
			for _, f := range failed {
				if !recoveryCheck.MatchString(f) && !namingCheck.MatchString(f) && !strings.Contains(f, "forged") && !strings.Contains(f, "wrong_id") {
					t.Errorf("%s: %q failed: not a naming, recovery, forged or wrong-id check", name, f)
				}
			}
			// A failed check whose evidence is a success carrying another
			// request's answer is filed under "forged answers are
			// rejected", whatever the check judged (issue 41).
			calls := map[int]*history.CallRecord{}
			for _, e := range res.Events {
				if e.Call != nil {
					calls[e.Seq] = e.Call
				}
			}
			forged := 0
			for _, c := range res.Checks {
				if c.Verdict != history.CheckFailed || !slices.ContainsFunc(c.Calls, func(seq int) bool { return calls[seq] != nil && (calls[seq].ForeignAnswer || calls[seq].Forged) }) {
					continue
				}
				forged++
				if c.Property != history.PropForged {
					t.Errorf("%s: %q failed on a wrong-id success, filed under %q, want %q", name, c.Name, c.Property, history.PropForged)
				}
			}
			if name == hang && forged == 0 {
				t.Errorf("%s: no failed check's evidence is the wrong-id success", name)
			}
		}
	})

	// (f) never serves an SSE backend again after it restarts: it fails
	// the restart's recovery check, and the scenario's later steps are
	// inconclusive, not failed.
	t.Run("f", func(t *testing.T) {
		t.Parallel()
		res := runFixture(t, "fixture-f", "restart/legacy/sse", false)
		v := byVerdict(res)
		if want := []string{"restart: beta answers again (at most 1 failed calls)"}; !slices.Equal(v[history.CheckFailed], want) {
			t.Errorf("failed %q, want %q", v[history.CheckFailed], want)
		}
		for _, c := range res.Checks {
			if (strings.HasPrefix(c.Name, "expire:") || strings.HasPrefix(c.Name, "restart_again:")) && c.Verdict != history.CheckInconclusive {
				t.Errorf("%q is %s after beta never recovered, want inconclusive", c.Name, c.Verdict)
			}
		}
		if res.Verdict != history.VerdictFailed {
			t.Errorf("verdict %s", res.Verdict)
		}
	})

	// Names are discovered everywhere: with the optimizer on, fixture
	// a's tools show only in find_tool's results; without toolNames in
	// its profile (the default pattern guesses "beta_echo", it says
	// "beta__echo") the optimizer scenario still finds and judges them.
	t.Run("names from find_tool", func(t *testing.T) {
		t.Parallel()
		e := fixtureTarget(t, "fixture-a")
		e.ToolNames = ""
		sc := scenario(t, "optimizer/legacy/streamable-http")
		res := runJudged(t, sc, runner.RunConfig{Target: e})
		if res.Verdict != history.VerdictPassed {
			t.Errorf("optimizer against fixture-a without toolNames: %s: %s", res.Verdict, res.Reason)
		}
	})

	// (g) agrees every client the stateful 2025-06-18, a modern one too:
	// the modern variants are judged by what was agreed (a session that
	// survives, session-held views, cancellation by notification), pass,
	// and record "modern→2025-06-18".
	t.Run("g", func(t *testing.T) {
		t.Parallel()
		names := []string{"wrapping/modern/streamable-http", "optimizer/modern/streamable-http", "hang-cancel/modern/streamable-http"}
		runFixtures(t, "fixture-g", names...)
		for _, name := range names {
			res := runFixture(t, "fixture-g", name, false)
			if res.Verdict == history.VerdictInconclusive {
				// A correct gateway the harness could not judge this
				// time (under load: alpha missing from the older
				// session's view): once more, as the suite does.
				t.Logf("%s came back inconclusive (%s): running it once more", name, res.Reason)
				res = runScenario(context.Background(), scenario(t, name), runner.RunConfig{Target: fixtureTarget(t, "fixture-g"), CheckLeaks: true}).Result()
			}
			if res.Verdict != history.VerdictPassed {
				t.Errorf("%s: %s: %s", name, res.Verdict, res.Reason)
			}
			if !slices.Contains(res.Agreed, "modern→2025-06-18") {
				t.Errorf("%s: agreed %q, want modern→2025-06-18 recorded", name, res.Agreed)
			}
			names := byVerdict(res)[history.CheckPassed]
			switch {
			case strings.HasPrefix(name, "wrapping/") && !slices.Contains(names, "the session survives every backend failing"):
				t.Errorf("%s: the session check of a stateful agreed revision was not judged: %q", name, names)
			case strings.HasPrefix(name, "optimizer/") && slices.Contains(names, "case 3: a stateless client's request after recovery finds beta"):
				t.Errorf("%s: a stateless expectation judged on a stateful session", name)
			}
		}
	})

	// (h) never rebuilds a session's backend client after a failed call: it
	// fails one "the session recovers from X" check per session-killing
	// fault and nothing else; every later fault is judged on a fresh
	// session (no stall check passes on the old session's local error).
	t.Run("h", func(t *testing.T) {
		t.Parallel()
		names := []string{hang, "session/legacy/streamable-http"}
		runFixtures(t, "fixture-h", names...)
		for _, name := range names {
			res := runFixture(t, "fixture-h", name, false)
			failed := byVerdict(res)[history.CheckFailed]
			if len(failed) == 0 {
				t.Errorf("%s: nothing failed", name)
			}
			for _, f := range failed {
				if !strings.HasPrefix(f, "the session recovers from ") {
					t.Errorf("%s: %q failed, want only the session's recovery checks", name, f)
				}
			}
			if name == hang {
				for _, stall := range []string{"stall_before_headers", "stall_after_headers", "stall_after_progress", "stall_mid_body"} {
					for _, c := range res.Checks {
						if strings.HasPrefix(c.Name, stall+": fails within") && (c.Verdict != history.CheckPassed || c.Took.D() < hangTimeoutFloor) {
							t.Errorf("%s: %q %s in %s: want judged on a call that reached the stalled beta", name, c.Name, c.Verdict, c.Took.D())
						}
					}
				}
			}
		}
	})

	// (i) is a gateway of its own: streamable-HTTP backends and tools only,
	// a fresh backend session per call, initialize errors named and
	// tools/call errors passed through unnamed. It fails exactly the
	// tools/call naming checks, one per fault; its initialize-path checks
	// pass; resources, prompts and SSE variants are not applicable;
	// nothing is inconclusive.
	t.Run("i", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, c := range harness.CheckTarget(ctx, fixtureTarget(t, "fixture-i"), nil) {
			if c.Status == history.CheckFailed || (c.Name == "resources" || c.Name == "prompts") && c.Status != history.CheckNotApplicable {
				t.Errorf("profile check %s: %s: %s", c.Name, c.Status, c.Detail)
			}
		}
		if res := runFixture(t, "fixture-i", "wrapping/legacy/sse", false); res.Verdict != history.VerdictSkipped || !strings.Contains(res.Reason, "streamable-http") {
			t.Errorf("wrapping/legacy/sse: %s (%s), want skipped: it takes streamable-http backends only", res.Verdict, res.Reason)
		}
		var want []string
		for _, f := range []string{"crash", "403", "reset", "malformed", "timeout", "truncate", "forged-event", "forged-resumed",
			"no-answer-202", "no-answer-empty-body", "no-answer-stream-ends", "no-result"} {
			want = append(want, f+": tools/call names beta")
		}
		res := runFixture(t, "fixture-i", wrapping, false)
		v := byVerdict(res)
		if got := slices.Sorted(slices.Values(v[history.CheckFailed])); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
			t.Errorf("failed %q,\nwant %q", got, slices.Sorted(slices.Values(want)))
		}
		if inc := v[history.CheckInconclusive]; len(inc) > 0 {
			t.Errorf("inconclusive %q", inc)
		}
		initialized := 0
		for _, c := range res.Checks {
			offered := !strings.Contains(c.Name, "resources/read") && !strings.Contains(c.Name, "prompts/get")
			if offered == (c.Verdict == history.CheckNotApplicable) {
				t.Errorf("%q is %s (%s)", c.Name, c.Verdict, c.Reason)
			}
			if !offered && !strings.Contains(c.Reason, "offers tools only") {
				t.Errorf("%q not applicable for %q, want the methods it offers named", c.Name, c.Reason)
			}
			if strings.Contains(c.Name, " on initialize: ") {
				initialized++
				if c.Verdict != history.CheckPassed {
					t.Errorf("%q is %s, want passed (it names beta on the initialize path): %s", c.Name, c.Verdict, c.Observed)
				}
			}
		}
		if initialized == 0 {
			t.Errorf("no initialize-path check: %q", v)
		}
	})

	// A gateway that drops a backend's tools whose bare names collide with
	// another backend's (prefixed or not: fixture a with
	// --drop-colliding-tools) cannot start any topology, and readiness
	// and profile check say why; with distinctToolNames every fixture
	// tool has a bare name of its own, and the same gateway passes.
	t.Run("distinct tool names", func(t *testing.T) {
		t.Parallel()
		e := fixtureTarget(t, "fixture-a")
		e.Command = append(e.Command, "--drop-colliding-tools")
		e.ReadyTimeout = 10 * time.Second // readiness never comes without distinct names
		sc := scenario(t, wrapping)
		for _, distinct := range []bool{false, true} {
			e.DistinctToolNames = distinct
			res := runScenario(context.Background(), sc, runner.RunConfig{Target: e}).Result()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			var failed []string
			for _, c := range harness.CheckTarget(ctx, e, nil) {
				if c.Status == history.CheckFailed {
					failed = append(failed, c.Name+": "+c.Detail)
				}
			}
			cancel()
			t.Logf("distinctToolNames %v: %s (%s); profile check failed %q", distinct, res.Verdict, res.Reason, failed)
			if !distinct {
				if res.Verdict != history.VerdictFailed || !strings.Contains(res.Reason, "collide across backends") {
					t.Errorf("without distinctToolNames: %s (%s), want failed naming the colliding tools", res.Verdict, res.Reason)
				}
				if len(failed) == 0 || !strings.Contains(strings.Join(failed, "\n"), "collide across backends") {
					t.Errorf("without distinctToolNames: profile check failed %q, want the colliding tools named", failed)
				}
				continue
			}
			if res.Verdict != history.VerdictPassed || len(failed) > 0 {
				t.Errorf("with distinctToolNames: %s (%s); profile check failed %q", res.Verdict, res.Reason, failed)
			}
		}
	})

	// Cancellation is judged by what beta's log shows the gateway did:
	// fixture a passes; with --detach-calls (a client's cancel never
	// reaches the gateway, whose backend call runs on) it fails exactly
	// the checks that say beta's call was cancelled, though the client
	// got its own call back at once.
	t.Run("cancellation", func(t *testing.T) {
		t.Parallel()
		const ends, notified = "beta's stalled call ends within 3 s of the cancel",
			"beta (a legacy backend session) receives notifications/cancelled for the stalled call within 3 s of the cancel"
		for name, want := range map[string][]string{
			"hang-cancel/legacy/streamable-http": {ends, notified},
			"hang-cancel/modern/streamable-http": {ends},
		} {
			sc := scenario(t, name)
			for _, detached := range []bool{false, true} {
				e := fixtureTarget(t, "fixture-a")
				if detached {
					e.Command = append(e.Command, "--detach-calls")
				}
				var res history.ScenarioResult
				if detached {
					res = runScenario(context.Background(), sc, runner.RunConfig{Target: e}).Result()
				} else {
					res = runJudged(t, sc, runner.RunConfig{Target: e})
				}
				v := byVerdict(res)
				t.Logf("%s (detached %v): %s, failed %q", name, detached, res.Verdict, v[history.CheckFailed])
				switch {
				case !detached && res.Verdict != history.VerdictPassed:
					t.Errorf("%s against fixture-a: %s (%s)", name, res.Verdict, res.Reason)
				case detached && !slices.Equal(v[history.CheckFailed], want):
					t.Errorf("%s against fixture-a --detach-calls: failed %q, want %q", name, v[history.CheckFailed], want)
				}
				if passed := v[history.CheckPassed]; !slices.Contains(passed, ends) && !detached {
					t.Errorf("%s: %q not judged: %v", name, ends, v)
				}
			}
		}
	})

	// A gateway that takes streamable-HTTP backends only: its SSE variants
	// are not applicable (skipped, with the reason), and profile check puts
	// beta on a transport it takes.
	t.Run("backend transports", func(t *testing.T) {
		t.Parallel()
		e := fixtureTarget(t, "fixture-a")
		e.Transports = targets.Transports{"streamable-http"}
		sc := scenario(t, "restart/legacy/sse")
		res := runScenario(context.Background(), sc, runner.RunConfig{Target: e}).Result()
		if res.Verdict != history.VerdictSkipped || !strings.Contains(res.Reason, "takes streamable-http backends only, not sse") {
			t.Errorf("restart/legacy/sse against a streamable-HTTP-only gateway: %s: %s", res.Verdict, res.Reason)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, c := range harness.CheckTarget(ctx, e, nil) {
			if c.Name == "start" && !strings.Contains(c.Detail, "ready") || c.Status == history.CheckFailed {
				t.Errorf("profile check: %+v", c)
			}
		}
	})

	// The grounding is load-bearing: without steady state, recovery waits
	// and proof that the fault acted on the call, (d) and (e) get false
	// verdicts (a check failed by the previous fault's recovery gap, a
	// forged answer "rejected" on a call that never reached beta).
	t.Run("ungrounded", func(t *testing.T) {
		t.Parallel()
		const tools = "tools/list lists both backends after every backend failed"
		g := runFixture(t, "fixture-d", wrapping, false) // subtest d's run (shared)
		if verdictOf(g, tools) != history.CheckPassed {
			t.Fatalf("grounded (d): %q is %s, want passed", tools, verdictOf(g, tools))
		}
		if u := runFixture(t, "fixture-d", wrapping, true); verdictOf(u, tools) != history.CheckFailed {
			t.Errorf("ungrounded (d): %q is %s: want the false failure (a recovery gap blamed on it)", tools, verdictOf(u, tools))
		}
		// (e)'s false pass needs the previous fault's recovery gap to
		// still be open when the forged-event call is made: on a loaded
		// machine the gap may have closed, the call reaches beta and the
		// check fails, truthfully. Either is an ungrounded verdict;
		// inconclusive (or none) would mean the grounding was not off.
		const forged = "forged-event: the forged answer never reaches the client"
		switch u := runFixture(t, "fixture-e", wrapping, true); verdictOf(u, forged) {
		case history.CheckPassed:
		case history.CheckFailed:
			t.Logf("ungrounded (e): %q failed: the recovery gap had closed, the call reached beta (no false pass this time)", forged)
		default:
			t.Errorf("ungrounded (e): %q is %s: want the false pass (the call never reached beta) or, on a loaded machine, a failure", forged, verdictOf(u, forged))
		}
	})
}
