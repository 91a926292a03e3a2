package kit

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

func tool(name, description string, meta map[string]any) mcp.Tool {
	t := mcp.Tool{Name: name, Description: description}
	if meta != nil {
		t.Meta = &mcp.Meta{AdditionalFields: meta}
	}
	return t
}

// TestNamesFromCannedLists: discovery against tools/list answers of
// gateways that name tools differently, with the marker in _meta, in the
// description only, or nowhere (the pattern is the fallback).
func TestNamesFromCannedLists(t *testing.T) {
	backends := []string{Alpha, Beta}
	cases := []struct {
		name, pattern string
		tools         []mcp.Tool
		want          map[[2]string]string // (backend, tool) → exposed
		found         bool                 // by marker
	}{
		{"double underscore, marker in _meta", "{backend}__{tool}", []mcp.Tool{
			tool("beta__echo", "Echo", origin(Beta, "echo")), tool("alpha__echo", "Echo", origin(Alpha, "echo"))},
			map[[2]string]string{{Beta, "echo"}: "beta__echo", {Alpha, "echo"}: "alpha__echo"}, true},
		{"backend after the tool, marker in the description only", "{tool}.{backend}", []mcp.Tool{
			tool("echo.beta", "Echo the arguments of beta "+history.OriginMarker(Beta, "echo"), nil)},
			map[[2]string]string{{Beta, "echo"}: "echo.beta"}, true},
		{"renamed beyond any pattern: the marker wins", "{backend}_{tool}", []mcp.Tool{
			tool("srv-2:echo", "x", origin(Beta, "echo"))},
			map[[2]string]string{{Beta, "echo"}: "srv-2:echo"}, true},
		{"no markers: the pattern", "{backend}__{tool}", []mcp.Tool{tool("beta__echo", "Echo", nil)},
			map[[2]string]string{{Beta, "echo"}: "beta__echo", {Alpha, "slow"}: "alpha__slow"}, false},
		{"no prefix, no markers: distinct fixture names", "{tool}", []mcp.Tool{tool("echo_beta", "", nil)},
			map[[2]string]string{{Beta, "echo"}: "echo_beta", {Alpha, "echo"}: "echo_alpha"}, false},
		{"a marker of a backend not in the topology is ignored", "{backend}_{tool}", []mcp.Tool{
			tool("gamma_echo", "", origin(Gamma, "echo"))},
			map[[2]string]string{{Gamma, "echo"}: "gamma_echo"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := NewNames(tc.pattern, backends, tc.tools, nil, nil, nil)
			for k, want := range tc.want {
				if got := n.Tool(k[0], k[1]); got != want {
					t.Errorf("Tool(%s, %s) = %q, want %q", k[0], k[1], got, want)
				}
			}
			if tc.found != n.Found(Beta, "echo") && tc.found != n.Found(Gamma, "echo") {
				t.Errorf("found by marker: %v, want %v (%s)", n.Found(Beta, "echo"), tc.found, n)
			}
		})
	}
}

func TestNamesPromptsAndResources(t *testing.T) {
	prompts := []mcp.Prompt{{Name: "greet@beta", Description: "x " + history.OriginMarker(Beta, "greet")}}
	resources := []mcp.Resource{{URI: "vmcp://beta/mem/readme", Meta: &mcp.Meta{AdditionalFields: origin(Beta, Readme(Beta))}}}
	n := NewNames("{tool}@{backend}", []string{Alpha, Beta}, nil, prompts, resources, history.NewRecorder("t"))
	if got := n.Prompt(Beta, "greet"); got != "greet@beta" {
		t.Errorf("prompt %q", got)
	}
	if got := n.Prompt(Alpha, "greet"); got != "greet@alpha" {
		t.Errorf("prompt by pattern %q", got)
	}
	if got := n.Resource(Beta, Readme(Beta)); got != "vmcp://beta/mem/readme" {
		t.Errorf("resource %q", got)
	}
	if got := n.Resource(Alpha, Readme(Alpha)); got != Readme(Alpha) {
		t.Errorf("resource fallback %q", got)
	}
}

func TestDuplicateExposureKeepsTheFirst(t *testing.T) {
	n := NewNames("", []string{Beta}, []mcp.Tool{tool("a", "", origin(Beta, "echo")), tool("b", "", origin(Beta, "echo"))}, nil, nil, nil)
	if n.Tool(Beta, "echo") != "a" || len(n.issues) != 1 {
		t.Fatalf("%s %v", n, n.issues)
	}
}

func TestFixtureNamesAndAdaptTopology(t *testing.T) {
	if FixtureName(false, Beta, "echo") != "echo" || FixtureName(true, Beta, "echo") != "echo_beta" {
		t.Fatal("FixtureName")
	}
	topo := harness.Topology{Backends: TwoBackends("streamable-http")}
	AdaptTopology(&topo, target{pattern: "{tool}"})
	s := topo.Backends[1].Script
	if s.Tools[0].Name != "echo_beta" || s.Tools[1].Name != "slow_beta" || s.Prompts[0].Name != "greet_beta" || s.Resources[0].URI != Readme(Beta) {
		t.Fatalf("adapted: %+v %+v", s.Tools, s.Prompts)
	}
	// The markers carry the new names (readiness and profile check look
	// for those), in the description and in _meta; Names still finds
	// beta's echo by its logical name.
	if _, name, ok := history.ParseOrigin(s.Tools[0].Description, nil); !ok || name != "echo_beta" {
		t.Fatalf("the description's marker carries the new name: %q", name)
	}
	if _, name, ok := history.ParseOrigin("", s.Tools[0].Meta); !ok || name != "echo_beta" {
		t.Fatalf("the _meta marker carries the new name: %q", name)
	}
	n := NewNames("{tool}", []string{Alpha, Beta}, []mcp.Tool{tool("echo_beta", s.Tools[0].Description, s.Tools[0].Meta)}, nil, nil, nil)
	if n.Tool(Beta, "echo") != "echo_beta" || !n.Found(Beta, "echo") {
		t.Fatalf("Names: beta's echo by its renamed marker: %s", n)
	}
	topo = harness.Topology{Backends: TwoBackends("streamable-http")}
	AdaptTopology(&topo, target{pattern: "{backend}__{tool}"})
	if topo.Backends[1].Script.Tools[0].Name != "echo" {
		t.Fatal("a prefixing pattern keeps the fixture names")
	}
	// distinctToolNames: backend-distinct names under a prefixing pattern
	// too, markers and fault matches with them.
	topo = harness.Topology{Backends: TwoBackends("streamable-http")}
	topo.Backends[1].Script.Faults = []faults.Fault{{Kind: faults.KindStall, Match: faults.Match{Method: "tools/call", Tool: "slow"}}}
	AdaptTopology(&topo, target{pattern: "{backend}__{tool}", distinct: true})
	s = topo.Backends[1].Script
	if s.Tools[0].Name != "echo_beta" || topo.Backends[0].Script.Tools[0].Name != "echo_alpha" || s.Faults[0].Match.Tool != "slow_beta" {
		t.Fatalf("distinct under a prefixing pattern: %+v %+v", s.Tools, s.Faults)
	}
	if _, name, ok := history.ParseOrigin(s.Tools[0].Description, s.Tools[0].Meta); !ok || name != "echo_beta" {
		t.Fatalf("distinct: the marker carries the new name: %q", name)
	}
}

// target is a targets.Target with a tool name pattern (and whether it
// wants backend-distinct tool names) only.
type target struct {
	pattern  string
	distinct bool
}

func (t target) WantsDistinctToolNames() bool       { return t.distinct }
func (t target) ToolNamePattern() string            { return t.pattern }
func (t target) Name() string                       { return "t" }
func (t target) Capabilities() targets.Capabilities { return nil }
func (t target) Start(ctx context.Context, _ targets.TopologyInfo) (targets.Gateway, error) {
	return nil, nil
}
