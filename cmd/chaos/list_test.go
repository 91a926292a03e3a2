package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
)

// TestListAppliesTransportsAndMethods: `chaos run --list` shows what the
// run will not judge on a gateway that takes streamable-HTTP backends only
// and offers tools only: every SSE variant as a whole, and the resources
// and prompts checks of the streamable-HTTP variants; a target declaring
// neither shows "-" for those scenarios.
func TestListAppliesTransportsAndMethods(t *testing.T) {
	t.Parallel()
	selected, err := scenarios.Select(scenarios.Catalogue(), "wrapping/legacy/sse,wrapping/legacy/streamable-http,restart/modern/streamable-http")
	if err != nil || len(selected) != 3 {
		t.Fatalf("select: %v (%d)", err, len(selected))
	}
	narrow := targets.Exec{TargetName: "gw", Transports: targets.Transports{"streamable-http"}, Methods: targets.Methods{"tools"}}
	var buf bytes.Buffer
	if err := printList(&buf, selected, narrow); err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(buf.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = line
		}
	}
	if r := rows["wrapping/legacy/sse"]; !strings.Contains(r, "the whole scenario: the target's profile takes streamable-http backends only, not sse") {
		t.Errorf("SSE variant: %q", r)
	}
	for _, name := range []string{"wrapping/legacy/streamable-http", "restart/modern/streamable-http"} {
		r := rows[name]
		if !strings.Contains(r, "checks on resources (the target's profile offers tools only, not resources)") || !strings.Contains(r, "checks on prompts") {
			t.Errorf("%s: %q", name, r)
		}
	}
	buf.Reset()
	if err := printList(&buf, selected, targets.Exec{TargetName: "gw"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "profile") || strings.Count(buf.String(), " -\n") != 3 {
		t.Errorf("a target declaring no transports or methods:\n%s", buf.String())
	}
}
