package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// maxInitTries bounds the tools init calls while it looks for one that
// answers a result.
const maxInitTries = 5

// calledTool is a tool init called successfully: its arguments (JSON) and
// how long the call took.
type calledTool struct {
	Name string
	Args string
	Took time.Duration
}

// findWorkingTool calls the tools of tools (in order, at most
// maxInitTries) with arguments made from their input schemas, and returns
// the first that answers a result (not an error). The starter's steady
// state then demands what init saw: that tool answering ok.
func findWorkingTool(ctx context.Context, c *history.Client, tools []mcp.Tool, timeout time.Duration) (calledTool, error) {
	var tried []string
	for _, t := range tools[:min(len(tools), maxInitTries)] {
		args := argumentsFor(t)
		cctx, cancel := context.WithTimeout(ctx, timeout)
		call := c.CallTool(cctx, t.Name, args)
		cancel()
		if call.Err == nil && !call.IsError {
			js, err := json.Marshal(args)
			if err != nil {
				return calledTool{}, err
			}
			return calledTool{Name: t.Name, Args: string(js), Took: call.Took()}, nil
		}
		tried = append(tried, fmt.Sprintf("%s: %s", t.Name, clip(call.Text(), 120)))
	}
	return calledTool{}, fmt.Errorf("no tool answered a result to a call with arguments made from its schema (%s): a starter's steady state needs a tool that works; fix the backend, or write the experiment by hand", strings.Join(tried, "; "))
}

// argumentsFor makes arguments for a tool from its input schema: a value
// for each required property (its first enum value, its default, or a
// plain value of its type) and "chaos" for an optional string "text",
// "message" or "msg" (an echo's argument).
func argumentsFor(t mcp.Tool) map[string]any {
	args := map[string]any{}
	props := t.InputSchema.Properties
	for _, name := range t.InputSchema.Required {
		args[name] = valueFor(props[name])
	}
	for _, name := range []string{"text", "message", "msg"} {
		if p, ok := props[name].(map[string]any); ok && p["type"] == "string" && args[name] == nil {
			args[name] = "chaos"
		}
	}
	return args
}

// valueFor is a plain value for a JSON schema.
func valueFor(schema any) any {
	s, _ := schema.(map[string]any)
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	if d, ok := s["default"]; ok {
		return d
	}
	switch s["type"] {
	case "integer", "number":
		return 1
	case "boolean":
		return true
	case "array":
		return []any{}
	case "object":
		obj := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for _, r := range req {
			if name, ok := r.(string); ok {
				obj[name] = valueFor(props[name])
			}
		}
		return obj
	}
	return "chaos"
}

// withinFor is the starter's bound for a call init measured at took: ten
// times it plus a second, rounded up to 100 ms, at most 9 s (below the
// starter's call timeout of 10 s).
func withinFor(took time.Duration) time.Duration {
	d := 10*took + time.Second
	d = (d + 99*time.Millisecond).Truncate(100 * time.Millisecond)
	return min(d, 9*time.Second)
}

// toolsOf returns the tools of the listing named in names, in the order
// of names.
func toolsOf(all []mcp.Tool, names []string) []mcp.Tool {
	byName := map[string]mcp.Tool{}
	for _, t := range all {
		byName[t.Name] = t
	}
	var out []mcp.Tool
	for _, n := range names {
		if t, ok := byName[n]; ok {
			out = append(out, t)
		}
	}
	// Tools needing fewer arguments first: the likelier to answer a
	// made-up call.
	slices.SortStableFunc(out, func(a, b mcp.Tool) int { return len(a.InputSchema.Required) - len(b.InputSchema.Required) })
	return out
}
