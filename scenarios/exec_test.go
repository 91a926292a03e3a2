package scenarios_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// TestExecTargetRunsScenarios: the scenarios are target-agnostic. The same
// scenario code runs against an exec target (our gateway as a process,
// `chaos vmcp`, configured from the shipped template, built exactly as the
// VMCP_CHAOS_TARGET=exec suite and `chaos run --target exec` build it) and
// passes; a target lacking a capability gets the scenarios that need it
// skipped, with the capability named.
func TestExecTargetRunsScenarios(t *testing.T) {
	t.Parallel()
	bctx, bcancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer bcancel()
	bin, err := runtimes.BuildChaos(bctx) // before any scenario deadline starts
	if err != nil {
		t.Fatal(err)
	}
	chaos := func() (string, error) { return bin, nil }
	target, err := targets.TargetConfig{Kind: "exec"}.Target(chaos)
	if err != nil {
		t.Fatal(err)
	}
	if target.Name() != "chaos-vmcp" || !target.Capabilities().Has(targets.CapReinitOn404) {
		t.Fatalf("exec target %s with %s", target.Name(), target.Capabilities())
	}
	for _, name := range []string{"wrapping/modern/sse", "hang/legacy/streamable-http"} {
		sc := scenario(t, name)
		res := runJudged(t, sc, runner.RunConfig{Target: target, CheckLeaks: true})
		t.Logf("%s against %s: %s in %s %s", name, target.Name(), res.Verdict, res.Duration.D(), res.Reason)
		// The initialize-path checks do not apply to a gateway that keeps
		// its backend sessions open; nothing else may be skipped.
		skipped := slices.DeleteFunc(slices.Clone(res.SkippedChecks), func(s string) bool { return strings.Contains(s, "keeps its backend sessions open") })
		if res.Verdict != history.VerdictPassed || len(skipped) > 0 {
			t.Errorf("%s against %s: %s %s %v", name, target.Name(), res.Verdict, res.Reason, skipped)
		}
		if len(res.Figures) == 0 {
			t.Errorf("%s: no figures", name)
		}
	}

	// The same gateway declaring only the session API: the breaker
	// scenario is skipped, and says which capability is missing.
	lacking, err := targets.TargetConfig{Kind: "exec", Capabilities: "session-api", CapabilitiesSet: true}.Target(chaos)
	if err != nil {
		t.Fatal(err)
	}
	res := runScenario(context.Background(), scenario(t, "breaker/legacy/streamable-http"), runner.RunConfig{Target: lacking}).Result()
	if res.Verdict != history.VerdictSkipped || !strings.Contains(res.Reason, string(targets.CapBreaker)) || !strings.Contains(res.Reason, "chaos-vmcp") {
		t.Errorf("breaker against a target without it: %s %q", res.Verdict, res.Reason)
	}
}

// TestTargetConfigFromEnv: the suite's VMCP_CHAOS_* variables choose the
// target with the CLI's rules.
func TestTargetConfigFromEnv(t *testing.T) {
	t.Setenv(targets.TargetEnv, "exec")
	t.Setenv(targets.GatewayCmdEnv, `'/opt/my gw/vmcp' serve --config "{{.ConfigPath}}"`)
	t.Setenv(targets.ConfigTemplateEnv, "/nonexistent/gw.yaml.tmpl")
	t.Setenv(targets.CapabilitiesEnv, "")
	cfg := targets.TargetConfigFromEnv()
	if cfg.NeedsChaosBinary() || !cfg.CapabilitiesSet || cfg.Capabilities != "" {
		t.Fatalf("config %+v", cfg)
	}
	if _, err := cfg.Target(nil); err == nil || !strings.Contains(err.Error(), targets.ConfigTemplateEnv) {
		t.Fatalf("missing template: %v", err)
	}
	t.Setenv(targets.TargetEnv, "nope")
	if _, err := targets.TargetConfigFromEnv().Target(nil); err == nil || !strings.Contains(err.Error(), targets.TargetEnv) {
		t.Fatalf("bad target: %v", err)
	}
}

// TestMissingMetricsIsAPartialPass: the breaker scenario against a target
// with a breaker but no metrics passes without its counter checks, and
// says so: the result lists the skipped check, naming the capability.
func TestMissingMetricsIsAPartialPass(t *testing.T) {
	t.Parallel()
	caps := targets.Capabilities{targets.CapBreaker, targets.CapHealthAPI}
	sc := scenario(t, "breaker/legacy/streamable-http")
	res := runJudged(t, sc, runner.RunConfig{Target: targets.Reference{TargetName: "no-metrics", Caps: caps}})
	t.Logf("%s: %s %s %v", sc.Name, res.Verdict, res.Reason, res.SkippedChecks)
	if !res.Partial() || len(res.SkippedChecks) != 1 || !strings.Contains(res.SkippedChecks[0], "lacks capability metrics") {
		t.Fatalf("want a pass with the metrics check skipped: %s %q %v", res.Verdict, res.Reason, res.SkippedChecks)
	}
	na := 0
	for _, c := range res.Checks {
		if c.Verdict == history.CheckNotApplicable {
			na++
			if !strings.HasPrefix(c.Name, "metrics:") || !strings.Contains(c.Reason, "lacks capability metrics") {
				t.Errorf("not applicable: %+v", c)
			}
		}
	}
	if na != 1 {
		t.Errorf("%d checks not applicable, want 1 (metrics): %+v", na, res.Checks)
	}
	for k := range res.Figures {
		if strings.HasPrefix(k, "metric_") {
			t.Errorf("figure %s from a metrics check that should not have run", k)
		}
	}
}

// TestBreakerWithoutHealthAPI: a target with a breaker but no health API
// is judged on the breaker's behaviour (it opens: calls stop reaching
// beta and fail fast naming it; beta is let back in), and the checks that
// read the circuit's state are not applicable, each with the reason.
func TestBreakerWithoutHealthAPI(t *testing.T) {
	t.Parallel()
	sc := scenario(t, "breaker/legacy/streamable-http")
	res := runJudged(t, sc, runner.RunConfig{Target: targets.Reference{TargetName: "breaker-only", Caps: targets.Capabilities{targets.CapBreaker}}})
	failed, judged := res.CheckCounts()
	t.Logf("%s: %s (%d/%d failed) %v", sc.Name, res.Verdict, failed, judged, res.SkippedChecks)
	if res.Verdict != history.VerdictPassed || len(res.SkippedChecks) != 5 {
		t.Fatalf("want a pass with the 4 health API checks and the metrics check not applicable: %s %s %v", res.Verdict, res.Reason, res.SkippedChecks)
	}
	for _, c := range res.Checks {
		if c.Name == "the circuit opens after 3 failed calls" && c.Verdict != history.CheckPassed {
			t.Errorf("judged by behaviour: %+v", c)
		}
	}
	// And a breaker that ignores failures fails it, health API or not.
	mutant := targets.Reference{TargetName: "no-breaker", Caps: targets.Capabilities{targets.CapBreaker}, Configure: func(cfg *vmcp.Config) { cfg.Breaker.Enabled = false }}
	res = runScenario(context.Background(), sc, runner.RunConfig{Target: mutant}).Result()
	if res.Verdict != history.VerdictFailed || !strings.Contains(res.Reason, "the circuit opens after 3 failed calls") {
		t.Fatalf("a breaker that never opens, without a health API: %s %s", res.Verdict, res.Reason)
	}
}

// TestKeepaliveWithoutHealthAPI: keepalive without a health API is judged
// by the pings beta receives; the health API checks are not applicable.
func TestKeepaliveWithoutHealthAPI(t *testing.T) {
	t.Parallel()
	sc := scenario(t, "keepalive/legacy/streamable-http")
	res := runJudged(t, sc, runner.RunConfig{Target: targets.Reference{TargetName: "keepalive-only", Caps: targets.Capabilities{targets.CapKeepalive}}})
	failed, judged := res.CheckCounts()
	t.Logf("%s: %s (%d/%d failed) %s", sc.Name, res.Verdict, failed, judged, res.Reason)
	if res.Verdict != history.VerdictPassed || len(res.SkippedChecks) != 4 || judged < 7 {
		t.Fatalf("want a pass with the 3 health API checks and the metrics check not applicable: %s %s %v", res.Verdict, res.Reason, res.SkippedChecks)
	}
}
