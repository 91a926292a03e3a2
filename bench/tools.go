package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// toolName is the name a bench backend gives its tool name for a gateway
// whose tool name pattern is pattern: name itself, or, when the pattern
// does not name the backend (a gateway that does not prefix, and keeps
// one of two same-named tools), name + "_" + backend, so every backend's
// tools stay distinct through it. The scenarios' fixtures do the same
// (scenarios/kit.FixtureName).
func toolName(pattern, backend, name string) string {
	if pattern == "" || targets.PatternPrefixesBackend(pattern) {
		return name
	}
	return name + "_" + backend
}

// echoTool is the backend's own name of its echo tool (what a direct
// call names).
func (c *Config) echoTool(backend string) string { return toolName(c.pattern, backend, "echo") }

// echoScript is a healthy backend with an echo tool (and tools-1 more, to
// make its catalogue as large as wanted), named for the target's tool
// name pattern (toolName). Each tool carries the origin marker of its own
// name, in its description and _meta, by which any gateway's listing is
// matched (targets.MatchTools).
func (c *Config) echoScript(name string, tools int) *fakebackends.Script {
	s := &fakebackends.Script{Name: name, Transport: fakebackends.TransportStreamableHTTP, Protocol: fakebackends.ProtocolAuto}
	echo := c.echoTool(name)
	s.Tools = append(s.Tools, fakebackends.ToolSpec{Name: echo, Description: "Echo " + history.OriginMarker(name, echo), Meta: origin(name, echo),
		Input:  map[string]any{"type": "object", "properties": map[string]any{"msg": map[string]any{"type": "string"}}},
		Result: fakebackends.ToolResult{Echo: true}})
	for i := 1; i < tools; i++ {
		n := toolName(c.pattern, name, fmt.Sprintf("tool_%03d", i))
		s.Tools = append(s.Tools, fakebackends.ToolSpec{Name: n,
			Description: "A filler tool with a description of ordinary length " + history.OriginMarker(name, n), Meta: origin(name, n),
			Input:  map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string", "description": "query"}}},
			Result: fakebackends.ToolResult{Text: "ok"}})
	}
	return s
}

func origin(backend, name string) map[string]any {
	return map[string]any{history.OriginMetaKey: backend + "/" + name}
}

// scriptTools are a script's tool names (runtimes.BackendInfo.Tools: what a
// target with ready.tools waits for).
func scriptTools(s *fakebackends.Script) []string {
	out := make([]string, len(s.Tools))
	for i, t := range s.Tools {
		out[i] = t.Name
	}
	return out
}

// exposedEcho returns the name under which t's gateway exposes backend's
// echo tool, found as `chaos run` finds tools (targets.MatchTools): by its
// origin marker, else by the target's tool name pattern.
func (c *Config) exposedEcho(ctx context.Context, t *topology, backend string) (string, error) {
	i := slices.IndexFunc(t.info.Backends, func(b runtimes.BackendInfo) bool { return b.Name == backend })
	if i < 0 {
		return "", fmt.Errorf("no backend %s in the topology", backend)
	}
	url := t.gateway.MCPURL()
	cl, err := history.Dial(ctx, url, history.RevisionLegacy, nil, history.WithCallTimeout(c.CallTimeout), history.WithCloseGrace(time.Second))
	if err != nil {
		return "", fmt.Errorf("tools/list at %s: %w", url, err)
	}
	defer closeClients([]*history.Client{cl})
	call := cl.ListTools(ctx)
	if call.Err != nil || call.Tools == nil {
		return "", fmt.Errorf("tools/list at %s: %v", url, call.Err)
	}
	echo := c.echoTool(backend)
	info := t.info.Backends[i]
	info.Tools = []string{echo}
	if m := targets.MatchTools(call.Tools.Tools, []runtimes.BackendInfo{info}, c.pattern); m[0].Exposed != "" {
		return m[0].Exposed, nil
	}
	names := make([]string, len(call.Tools.Tools))
	for i, tl := range call.Tools.Tools {
		names[i] = tl.Name
	}
	slices.Sort(names)
	return "", fmt.Errorf("tools/list at %s: no tool of backend %s named %s, by origin marker or by the tool name pattern %q (listed: %s); "+
		"a gateway that lists its tools only after its ready URL answers needs ready.tools: true in its profile",
		url, backend, echo, c.pattern, strings.Join(names, ", "))
}
