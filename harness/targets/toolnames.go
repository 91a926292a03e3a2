package targets

import (
	"cmp"
	"fmt"
	"strings"
)

// DefaultToolNamePattern is how a gateway exposes a backend's tools and
// prompts unless its target says otherwise: "<backend>_<tool>".
const DefaultToolNamePattern = "{backend}_{tool}"

// ToolNamesEnv is the tool name pattern of the target under test
// (TargetConfig.ToolNamePattern, `chaos run --tool-names`).
const ToolNamesEnv = "VMCP_CHAOS_TOOL_NAMES"

// ToolNamer is a Target that says how its gateway names a backend's tools
// and prompts (a pattern of {backend} and {tool}). The harness finds tools
// by their origin marker first (see OriginMarker); the pattern is the
// fallback for a gateway that drops descriptions and _meta.
type ToolNamer interface {
	ToolNamePattern() string
}

// ToolNamePatternOf returns t's tool name pattern: its ToolNamePattern
// when it is a ToolNamer with one, else DefaultToolNamePattern.
func ToolNamePatternOf(t Target) string {
	if n, ok := t.(ToolNamer); ok {
		return cmp.Or(n.ToolNamePattern(), DefaultToolNamePattern)
	}
	return DefaultToolNamePattern
}

// ToolNamePattern implements ToolNamer (Exec.ToolNames).
func (e Exec) ToolNamePattern() string { return e.ToolNames }

// DistinctToolNamer is a Target whose gateway needs every backend's
// tools to have bare names of their own (it drops tools whose names
// collide across backends, prefix or not).
type DistinctToolNamer interface {
	WantsDistinctToolNames() bool
}

// DistinctToolNamesOf reports whether t needs backend-distinct bare tool
// names: its pattern does not name the backend, or it says so
// (DistinctToolNamer).
func DistinctToolNamesOf(t Target) bool {
	if n, ok := t.(DistinctToolNamer); ok && n.WantsDistinctToolNames() {
		return true
	}
	return !PatternPrefixesBackend(ToolNamePatternOf(t))
}

// WantsDistinctToolNames implements DistinctToolNamer (Exec.DistinctToolNames).
func (e Exec) WantsDistinctToolNames() bool { return e.DistinctToolNames }

// ValidateToolNamePattern checks a tool name pattern: it must contain
// {tool} exactly once and {backend} at most once, and no other {...}.
func ValidateToolNamePattern(p string) error {
	if strings.Count(p, "{tool}") != 1 {
		return fmt.Errorf("tool name pattern %q: want {tool} exactly once (e.g. %q)", p, DefaultToolNamePattern)
	}
	if strings.Count(p, "{backend}") > 1 {
		return fmt.Errorf("tool name pattern %q: {backend} more than once", p)
	}
	rest := strings.NewReplacer("{tool}", "", "{backend}", "").Replace(p)
	if strings.ContainsAny(rest, "{}") {
		return fmt.Errorf("tool name pattern %q: only {backend} and {tool} are known", p)
	}
	return nil
}

// PatternPrefixesBackend reports whether a tool name pattern names the
// backend. When it does not (a gateway that exposes tools under their own
// names), fixture backends must give their tools distinct names.
func PatternPrefixesBackend(p string) bool { return strings.Contains(p, "{backend}") }

// ExposedName applies a tool name pattern to a backend's tool (or
// prompt) name.
func ExposedName(pattern, backend, name string) string {
	pattern = cmp.Or(pattern, DefaultToolNamePattern)
	return strings.NewReplacer("{backend}", backend, "{tool}", name).Replace(pattern)
}
