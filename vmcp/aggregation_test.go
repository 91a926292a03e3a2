package vmcp_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestPriorityAggregation(t *testing.T) {
	t.Parallel()
	a, b := startFake(t, alphaScript), startFake(t, betaScript)
	g := startGateway(t, gwConfig("aggregation: {conflictResolution: priority, priorityOrder: [beta, alpha]}\n", a, b))
	for _, modern := range []bool{false, true} {
		c := connect(t, g.URL(), modern)
		if got, want := toolNames(t, c), []string{"echo", "only_alpha", "only_beta"}; !slices.Equal(got, want) {
			t.Fatalf("tools = %v, want %v", got, want)
		}
		// The colliding "echo" goes to beta (first in priorityOrder), under
		// its original name.
		before := countTool(b.Requests(), "tools/call", "echo")
		if res, _ := callTool(t, c, "echo", map[string]any{"m": 1}); res.IsError {
			t.Fatal(resultText(res))
		}
		if after := countTool(b.Requests(), "tools/call", "echo"); after != before+1 {
			t.Errorf("beta got %d echo calls, want %d", after, before+1)
		}
		if res, _ := callTool(t, c, "only_alpha", nil); resultText(res) != "a" {
			t.Errorf("only_alpha = %q", resultText(res))
		}
		// Shared resource URI: beta wins.
		rr, err := c.ReadResource(ctxT(t, 5e9), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "mem://shared"}})
		if err != nil {
			t.Fatal(err)
		}
		if txt := rr.Contents[0].(mcp.TextResourceContents).Text; txt != "from beta" {
			t.Errorf("mem://shared = %q, want from beta", txt)
		}
		pr, err := c.GetPrompt(ctxT(t, 5e9), mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "greet"}})
		if err != nil {
			t.Fatal(err)
		}
		if txt := fmt.Sprint(pr.Messages[0].Content.(mcp.TextContent).Text); txt != "Hello from beta" {
			t.Errorf("greet = %q", txt)
		}
		pl, err := c.ListPrompts(ctxT(t, 5e9), mcp.ListPromptsRequest{})
		if err != nil || len(pl.Prompts) != 1 || pl.Prompts[0].Name != "greet" {
			t.Errorf("prompts = %+v, %v", pl, err)
		}
	}
}

func TestPrefixAggregationResourcesPrompts(t *testing.T) {
	t.Parallel()
	a, b := startFake(t, alphaScript), startFake(t, betaScript)
	// toolhive's key and format spelling.
	g := startGateway(t, gwConfig("aggregation: {conflictResolution: prefix, conflictResolutionConfig: {prefixFormat: \"{workload}.\"}}\n", a, b))
	c := connect(t, g.URL(), false)
	if got, want := toolNames(t, c), []string{"alpha.echo", "alpha.only_alpha", "beta.echo", "beta.only_beta"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	pl, err := c.ListPrompts(ctxT(t, 5e9), mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pl.Prompts {
		names = append(names, p.Name)
	}
	if want := []string{"alpha.greet", "beta.greet"}; !slices.Equal(names, want) {
		t.Fatalf("prompts = %v, want %v", names, want)
	}
	pr, err := c.GetPrompt(ctxT(t, 5e9), mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "alpha.greet"}})
	if err != nil {
		t.Fatal(err)
	}
	if txt := pr.Messages[0].Content.(mcp.TextContent).Text; txt != "Hello from alpha" {
		t.Errorf("alpha.greet = %q", txt)
	}
	// No priorityOrder: the shared URI goes to the first backend by name.
	rr, err := c.ReadResource(ctxT(t, 5e9), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "mem://shared"}})
	if err != nil {
		t.Fatal(err)
	}
	if txt := rr.Contents[0].(mcp.TextResourceContents).Text; txt != "from alpha" {
		t.Errorf("mem://shared = %q, want from alpha", txt)
	}
	if n := countTool(a.Requests(), "prompts/get", "greet"); n != 1 {
		t.Errorf("alpha saw %d prompts/get greet, want 1 (original name)", n)
	}
}
