package bench

import (
	"slices"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
)

// TestEchoScriptNames: behind a gateway that prefixes, the backends'
// tools keep their names; behind one that does not ("{tool}"), each
// backend's tools are distinct, and every tool carries the origin marker
// of its own name, so harness.MatchTools finds it by marker.
func TestEchoScriptNames(t *testing.T) {
	for _, tc := range []struct {
		pattern, echo, filler string
	}{
		{harness.DefaultToolNamePattern, "echo", "tool_001"},
		{"{backend}.{tool}", "echo", "tool_001"},
		{"{tool}", "echo_b2", "tool_001_b2"},
	} {
		c := Config{pattern: tc.pattern}
		s := c.echoScript("b2", 2)
		names := scriptTools(s)
		if !slices.Equal(names, []string{tc.echo, tc.filler}) {
			t.Errorf("pattern %q: tools %v, want [%s %s]", tc.pattern, names, tc.echo, tc.filler)
		}
		if c.echoTool("b2") != tc.echo {
			t.Errorf("pattern %q: echoTool = %q, want %q", tc.pattern, c.echoTool("b2"), tc.echo)
		}
		for _, tl := range s.Tools {
			b, n, ok := harness.ParseOrigin(tl.Description, tl.Meta)
			if !ok || b != "b2" || n != tl.Name {
				t.Errorf("pattern %q: tool %s carries origin %s/%s (%v), want b2/%s", tc.pattern, tl.Name, b, n, ok, tl.Name)
			}
		}
	}
}
