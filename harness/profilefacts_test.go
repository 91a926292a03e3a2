package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// TestPatternOfAndInfer: the tool name pattern is read back from exposed
// names, by origin marker or by name, and one pattern must fit all.
func TestPatternOfAndInfer(t *testing.T) {
	for _, tc := range []struct{ exposed, backend, tool, want string }{
		{"beta__echo", "beta", "echo", "{backend}__{tool}"},
		{"beta_echo", "beta", "echo", "{backend}_{tool}"},
		{"echo", "beta", "echo", "{tool}"},
		{"echo@beta", "beta", "echo", "{tool}@{backend}"},
		{"beta.tools.echo_beta", "beta", "echo_beta", "{backend}.tools.{tool}"},
		{"other", "beta", "echo", ""},
	} {
		if got := PatternOf(tc.exposed, tc.backend, tc.tool); got != tc.want {
			t.Errorf("PatternOf(%q, %q, %q) = %q, want %q", tc.exposed, tc.backend, tc.tool, got, tc.want)
		}
	}
	backends := []runtimes.BackendInfo{{Name: "alpha", Tools: []string{"echo"}}, {Name: "beta", Tools: []string{"echo"}}}
	marked := []mcp.Tool{{Name: "x1", Description: history.OriginMarker("alpha", "echo")}, {Name: "beta::echo", Description: history.OriginMarker("beta", "echo")}}
	if _, _, ok := inferPattern(marked, backends); ok {
		t.Error("x1 and beta::echo follow no one pattern: want none inferred")
	}
	named := []mcp.Tool{{Name: "alpha::echo"}, {Name: "beta::echo"}}
	if p, by, ok := inferPattern(named, backends); !ok || p != "{backend}::{tool}" || by != "beta/echo as beta::echo (name)" {
		t.Errorf("inferPattern by name = %q %q %v", p, by, ok)
	}
	if _, _, ok := inferPattern(named[:1], backends); ok {
		t.Error("beta's tool missing: want none inferred")
	}
}

// TestSuggestRecovery: a quarter more plus 2 s, in 5 s steps, within
// [DefaultRecovery, MaxRecovery].
func TestSuggestRecovery(t *testing.T) {
	for took, want := range map[time.Duration]time.Duration{
		100 * time.Millisecond: targets.DefaultRecovery, 3 * time.Second: 10 * time.Second,
		12400 * time.Millisecond: 20 * time.Second, 29500 * time.Millisecond: 40 * time.Second, time.Hour: targets.MaxRecovery,
	} {
		if got := SuggestRecovery(took); got != want {
			t.Errorf("SuggestRecovery(%s) = %s, want %s", took, got, want)
		}
	}
}

// TestFactLines: each fact implies its profile line and says what it
// does to a run; a fact that matches the default implies none.
func TestFactLines(t *testing.T) {
	f := Facts{ToolNames: "{backend}__{tool}", NamedBy: "beta/echo as beta__echo (origin marker)", Offered: []string{"tools"}, Served: []string{"tools"},
		Transports:  map[string]string{"streamable-http": "", "sse": "the gateway said: no sse", "stdio": "no stdio"},
		Revisions:   map[history.Revision]string{history.RevisionLegacy: "2025-06-18", history.RevisionModern: "2025-06-18"},
		CallTimeout: 5 * time.Second, StallTook: 10 * time.Second, StallMeasured: true, Recovery: 29500 * time.Millisecond,
		Caps: targets.Capabilities{targets.CapHealthAPI, targets.CapMetrics}}
	got := map[string]FactLine{}
	for _, l := range f.Lines() {
		got[l.Fact] = l
	}
	for fact, want := range map[string]string{
		"tool names": `toolNames: "{backend}__{tool}"`, "methods": "methods: [tools]", "backend transports": "backendTransports: [streamable-http]",
		"protocol revisions": "-", "call timeout": "-", "recovery": "recovery: 40s", "capabilities": "capabilities: [health-api, metrics]",
	} {
		if l := got[fact]; l.Line() != want || l.Effect == "" {
			t.Errorf("%s: line %q (want %q), effect %q", fact, l.Line(), want, l.Effect)
		}
	}
	if e := got["call timeout"].Effect; !strings.Contains(e, "no call timeout") {
		t.Errorf("call timeout effect %q", e)
	}
	// With the run's checks counted (chaos profile check counts them from
	// the catalogue): how many will fail.
	f.Timeout = &TimeoutChecks{Bounded: 20, Named: 6, Other: 2, Scenarios: 9, Unpinned: 8}
	for _, l := range f.Lines() {
		if l.Fact == "call timeout" && l.Effect != "no call timeout: the 26 'bounded by the call timeout' checks of the run will fail (in 9 scenarios), "+
			"and 2 more that need the stalled call to end (the session's recorded error); the 8 container scenarios' are not counted (a finding, not a profile error)" {
			t.Errorf("call timeout effect with counts: %q", l.Effect)
		}
	}
	late := f
	late.StallAnswered = true
	for _, l := range late.Lines() {
		if l.Fact == "call timeout" && !strings.Contains(l.Effect, "not applied: the 20 'bounded by the call timeout' checks of the run will fail (in 9 scenarios);") {
			t.Errorf("call timeout answered late, effect %q", l.Effect)
		}
	}
	f.Timeout = nil
	if e := got["protocol revisions"].Seen; e != "a 2025-11-25 client gets 2025-06-18; a 2026-07-28 client gets 2025-06-18" {
		t.Errorf("revisions %q", e)
	}
	f = Facts{ToolNames: "{backend}_{tool}", Served: targets.MethodFamilies, Transports: map[string]string{"streamable-http": "", "sse": "", "stdio": ""},
		Recovery: 200 * time.Millisecond, StallMeasured: true, StallAnswered: true, StallTook: 5 * time.Second, CallTimeout: 5 * time.Second}
	for _, l := range f.Lines() {
		if (l.Fact == "methods" || l.Fact == "backend transports" || l.Fact == "recovery") && l.Value != "" {
			t.Errorf("%s: the default fits, yet %q", l.Fact, l.Line())
		}
		if l.Fact == "call timeout" && l.Effect != "the call timeout is enforced" {
			t.Errorf("call timeout %q", l.Effect)
		}
	}
}
