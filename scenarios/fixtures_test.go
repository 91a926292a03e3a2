package scenarios_test

// Fixture gateways: correct gateways that look different from our
// reference (harness/internal/fixturegw), run as exec targets through
// their target profiles (testdata/profiles), and a broken variant of each.
// They prove the catalogue judges behaviour, not our names, JSON or words.

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
)

// FixtureGWEnv is the variable the fixture profiles' command reads the
// fixture gateway binary from.
const FixtureGWEnv = "VMCP_CHAOS_FIXTUREGW"

// buildFixtureGW builds harness/internal/fixturegw into a temporary
// directory the test removes, and points FixtureGWEnv at it.
func buildFixtureGW(t *testing.T) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fixturegw")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "../harness/internal/fixturegw").CombinedOutput(); err != nil {
		t.Fatalf("build fixturegw: %v\n%s", err, out)
	}
	t.Setenv(FixtureGWEnv, bin)
}

// fixtureTarget is the exec target of testdata/profiles/<name>.yaml, built
// the way `chaos run --profile` and VMCP_CHAOS_PROFILE build it.
func fixtureTarget(t *testing.T, name string) harness.Exec {
	t.Helper()
	tg, err := harness.TargetConfig{Profile: filepath.Join("testdata", "profiles", name+".yaml")}.Target(nil)
	if err != nil {
		t.Fatal(err)
	}
	return tg.(harness.Exec)
}

// TestFixtureGateways: each fixture's profile checks out (the gateway
// starts, every backend's tools are found by origin marker, each declared
// admin API is read in the fixture's own shape), and scenarios judged
// through the profiles pass against the correct fixtures and fail against
// the broken ones, for the broken behaviour.
func TestFixtureGateways(t *testing.T) {
	buildFixtureGW(t)
	for _, name := range []string{"fixture-a", "fixture-a-broken", "fixture-b", "fixture-b-broken"} {
		t.Run("profile check/"+name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			checks := harness.CheckTarget(ctx, fixtureTarget(t, name), nil)
			var names []string
			for _, c := range checks {
				t.Logf("%-14s %-14s %s", c.Name, c.Status, c.Detail)
				names = append(names, c.Name)
				if c.Status == harness.CheckFailed {
					t.Errorf("%s: %s", c.Name, c.Detail)
				}
			}
			want := []string{"start", "tools found", "health-api", "breaker state", "metrics", "optimizer"}
			if strings.HasPrefix(name, "fixture-b") {
				want = append(want, "session-api", "keepalive")
			}
			for _, w := range want {
				if !slices.Contains(names, w) {
					t.Errorf("no %q check: %v", w, names)
				}
			}
		})
	}

	// Fixture b's ready URL answers before its tools are listed: without
	// ready.tools the first call fails.
	t.Run("early ready/fixture-b", func(t *testing.T) {
		e := fixtureTarget(t, "fixture-b")
		e.ReadyTools = false
		// Indexing outlasts the check even on a loaded machine.
		e.Command = append(e.Command, "--index-delay", "60s")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		checks := harness.CheckTarget(ctx, e, nil)
		if len(checks) < 2 || checks[1].Name != "tools found" || checks[1].Status != harness.CheckFailed || !strings.Contains(checks[1].Detail, "503") {
			t.Fatalf("want tools found to fail with a 503 right after /ready answered: %+v", checks)
		}
	})

	// Scenarios through the profiles. Interim: the scenarios still call
	// tools by the reference's "<backend>_<tool>" names (discovery from
	// tools/list is landing in the scenario kit), so each fixture runs
	// here with the reference's tool naming; everything else (health API
	// path, shape, field names and values, session API, error wording, no
	// _meta, early ready) is the fixture's own, read through its profile.
	for _, tc := range []struct {
		profile, scenario string
		fail              []string // empty: must pass; else the failure reason contains these
	}{
		{"fixture-a", "wrapping/legacy/streamable-http", nil},
		{"fixture-a", "breaker/legacy/streamable-http", nil},
		{"fixture-a", "hang/modern/sse", nil},
		{"fixture-b", "session/legacy/streamable-http", nil},
		{"fixture-b", "breaker/modern/sse", nil},
		{"fixture-b", "hang/legacy/streamable-http", nil},
		{"fixture-a-broken", "wrapping/legacy/streamable-http", []string{`does not name "beta"`, "tool call failed: "}},
		{"fixture-b-broken", "hang/legacy/streamable-http", []string{"stall", "ended timeout"}},
	} {
		t.Run("scenario/"+tc.profile+"/"+tc.scenario, func(t *testing.T) {
			e := withReferenceToolNames(fixtureTarget(t, tc.profile))
			sc := scenario(t, tc.scenario)
			ctx, cancel := context.WithTimeout(context.Background(), sc.Timeout+30*time.Second)
			defer cancel()
			res := scenarios.Run(ctx, sc, scenarios.RunConfig{Target: e, CheckLeaks: true}).Result()
			t.Logf("%s against %s: %s in %s: %s %v", tc.scenario, e.Name(), res.Verdict, res.Duration.D(), res.Reason, res.SkippedChecks)
			if len(tc.fail) == 0 {
				if res.Verdict != harness.VerdictPassed {
					t.Fatalf("want passed: %s %s", res.Verdict, res.Reason)
				}
				return
			}
			if res.Verdict != harness.VerdictFailed {
				t.Fatalf("against the broken %s: %s, want failed", e.Name(), res.Verdict)
			}
			for _, w := range tc.fail {
				if !strings.Contains(res.Reason, w) {
					t.Errorf("the failure does not say %q: %s", w, res.Reason)
				}
			}
		})
	}
}

// withReferenceToolNames runs a fixture with the reference's tool naming
// ("{backend}_", prefix conflict resolution); see TestFixtureGateways.
func withReferenceToolNames(e harness.Exec) harness.Exec {
	var cmd []string
	for i := 0; i < len(e.Command); i++ {
		switch e.Command[i] {
		case "--priority":
			continue
		case "--prefix-format":
			i++
			continue
		}
		cmd = append(cmd, e.Command[i])
	}
	e.Command = append(cmd, "--prefix-format", "{backend}_")
	e.ToolNames = harness.DefaultToolNamePattern
	return e
}
