package bench

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// TestEchoScriptNames: behind a gateway that prefixes, the backends'
// tools keep their names; behind one that does not ("{tool}"), each
// backend's tools are distinct, and every tool carries the origin marker
// of its own name, so targets.MatchTools finds it by marker.
func TestEchoScriptNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern, echo, filler string
	}{
		{targets.DefaultToolNamePattern, "echo", "tool_001"},
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
			b, n, ok := history.ParseOrigin(tl.Description, tl.Meta)
			if !ok || b != "b2" || n != tl.Name {
				t.Errorf("pattern %q: tool %s carries origin %s/%s (%v), want b2/%s", tc.pattern, tl.Name, b, n, ok, tl.Name)
			}
		}
	}
}

// seenTarget records the topology it is asked to start and refuses it.
type seenTarget struct{ info *targets.TopologyInfo }

func (s seenTarget) Name() string                       { return "seen" }
func (s seenTarget) Capabilities() targets.Capabilities { return nil }
func (s seenTarget) ToolNamePattern() string            { return "{tool}" }
func (s seenTarget) Start(_ context.Context, topo targets.TopologyInfo) (targets.Gateway, error) {
	*s.info = topo
	return nil, errors.New("not started")
}

// TestStartPassesTools: the target is given every backend's tool names
// (what a profile with ready.tools waits for), named for its pattern.
func TestStartPassesTools(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var seen targets.TopologyInfo
	c := Config{Target: seenTarget{&seen}, Runtime: runtimes.InProcess{}}
	c.defaults()
	if _, err := c.start(ctx, time.Second, c.echoScript("alpha", 2), c.echoScript("beta", 1)); err == nil {
		t.Fatal("start: no error from a target that refuses")
	}
	if len(seen.Backends) != 2 || !slices.Equal(seen.Backends[0].Tools, []string{"echo_alpha", "tool_001_alpha"}) ||
		!slices.Equal(seen.Backends[1].Tools, []string{"echo_beta"}) {
		t.Errorf("target saw backends %+v, want alpha [echo_alpha tool_001_alpha] and beta [echo_beta]", seen.Backends)
	}
}
