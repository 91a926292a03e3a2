package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
)

// TestSuggestProfileRewritesFields: the suggestion sets each implied
// field (replacing a declared one in place, adding a missing one), removes
// a field whose default fits, keeps the other fields and comments, and
// keeps a declared reinit-on-404.
func TestSuggestProfileRewritesFields(t *testing.T) {
	t.Parallel()
	src := "# my gateway\nname: gw\ncommand: [gw]\n# copied\ntoolNames: \"{backend}_{tool}\"\nmethods: [tools, prompts]\ncapabilities: [session-api, reinit-on-404]\n"
	lines := []harness.FactLine{
		{Fact: "tool names", Seen: "beta/echo as beta__echo", Key: "toolNames", Value: `"{backend}__{tool}"`},
		{Fact: "methods", Seen: "all answered", Key: "methods"},
		{Fact: "backend transports", Seen: "takes streamable-http;\nnot sse", Key: "backendTransports", Value: "[streamable-http]"},
		{Fact: "recovery", Key: "recovery", Value: "40s"},
		{Fact: "capabilities", Key: "capabilities", Value: "[health-api]"},
		{Fact: "revisions", Seen: "x"},
	}
	out, err := suggestProfile([]byte(src), lines, targets.Capabilities{targets.CapSessionAPI, targets.CapReinitOn404})
	if err != nil {
		t.Fatal(err)
	}
	p, err := targets.ParseProfile(out, "s.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	caps, _ := p.Caps()
	if p.ToolNames != "{backend}__{tool}" || len(p.Methods) != 0 || !slices.Equal(p.BackendTransports, targets.Transports{"streamable-http"}) ||
		p.Recovery != 40*time.Second || caps.String() != "health-api,reinit-on-404" || p.Name != "gw" {
		t.Errorf("suggested:\n%s", out)
	}
	for _, want := range []string{"# my gateway", "# measured by chaos profile check --suggest: takes streamable-http; not sse\nbackendTransports"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("suggested lacks %q:\n%s", want, out)
		}
	}
	if suggestedPath("a/gw.yaml") != "a/gw.suggested.yaml" || suggestedPath("gw") != "gw.suggested.yaml" {
		t.Error("suggestedPath")
	}
}

// TestProfileSuggestWalkthrough is the README's walk-through: the draft
// profile of a gateway that differs from ours in every measured fact
// (profiles/walkthrough/new-gateway.yaml, fixturegw) fails its check,
// `--suggest` learns the facts and writes a profile with the fields they
// imply, and that profile passes `chaos profile check`.
func TestProfileSuggestWalkthrough(t *testing.T) {
	useFixtureGW(t)
	draft, err := os.ReadFile(filepath.Join("..", "..", "profiles", "walkthrough", "new-gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _ := filepath.Abs(filepath.Join("..", "..", "harness", "targets", "templates", "chaos-vmcp.yaml.tmpl"))
	prof := filepath.Join(t.TempDir(), "new-gateway.yaml")
	if err := os.WriteFile(prof, []byte(strings.Replace(string(draft), "../../harness/targets/templates/chaos-vmcp.yaml.tmpl", tmpl, 1)), 0o600); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := runChaosProfile(t, "profile", "check", prof)
	t.Logf("draft, stdout:\n%s\nstderr:\n%s", out, errOut)
	if code != 1 || !strings.Contains(out, `transport "sse" is not supported`) || !strings.Contains(out, "chaos profile check --suggest "+prof) {
		t.Fatalf("the draft: exit %d, want 1 with the gateway's refusal of an SSE backend and the hint of --suggest", code)
	}

	out, errOut, code = runChaosProfile(t, "profile", "check", "--suggest", prof)
	t.Logf("--suggest, stdout:\n%s\nstderr:\n%s", out, errOut)
	if code != 0 {
		t.Fatalf("--suggest: exit %d, want 0", code)
	}
	for _, want := range []string{"FACTS", `toolNames: "{backend}__{tool}"`, "methods: [tools]", "backendTransports: [streamable-http]",
		"a 2025-11-25 client gets 2025-06-18; a 2026-07-28 client gets 2025-06-18", "no call timeout", "beta's tools were back"} {
		if !strings.Contains(out, want) {
			t.Errorf("--suggest output lacks %q", want)
		}
	}
	suggested := strings.TrimSuffix(prof, ".yaml") + ".suggested.yaml"
	p, err := targets.LoadProfile(suggested)
	if err != nil {
		t.Fatal(err)
	}
	// The "no call timeout" fact counts the checks that will fail in the
	// run of the suggested profile (fewer than in the whole catalogue: no
	// SSE variants, tools only, no session API).
	st, err := targets.TargetConfig{Profile: suggested}.Target(os.Executable)
	if err != nil {
		t.Fatal(err)
	}
	n, all := countTimeoutChecks(scenarios.Catalogue(), st), countTimeoutChecks(scenarios.Catalogue(), targets.Exec{TargetName: "all", Caps: targets.AllCapabilities})
	want := fmt.Sprintf("no call timeout: the %d 'bounded by the call timeout' checks of the run will fail (in %d scenarios)", n.Bounded+n.Named, n.Scenarios)
	if !strings.Contains(out, want) || n.Bounded == 0 || n.Bounded+n.Named >= all.Bounded+all.Named {
		t.Errorf("--suggest output lacks %q (the whole catalogue: %+v)", want, all)
	}
	caps, _ := p.Caps()
	if p.ToolNames != "{backend}__{tool}" || !slices.Equal(p.Methods, targets.Methods{"tools"}) || !slices.Equal(p.BackendTransports, targets.Transports{"streamable-http"}) ||
		p.Recovery < 15*time.Second || caps.Has(targets.CapSessionAPI) || !caps.Has(targets.CapHealthAPI) || !caps.Has(targets.CapMetrics) {
		data, _ := os.ReadFile(suggested)
		t.Fatalf("suggested profile:\n%s", data)
	}

	out, errOut, code = runChaosProfile(t, "profile", "check", suggested)
	t.Logf("suggested, stdout:\n%s\nstderr:\n%s", out, errOut)
	if code != 0 {
		t.Fatalf("the suggested profile: exit %d, want 0", code)
	}
}
