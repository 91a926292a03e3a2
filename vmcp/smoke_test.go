package vmcp_test

import (
	"slices"
	"testing"
)

const alphaScript = `
name: alpha
protocol: auto
tools:
  - {name: echo, description: echo}
  - {name: only_alpha, result: {text: a}}
resources:
  - {uri: "mem://shared", text: "from alpha"}
prompts:
  - {name: greet, text: "Hello from alpha"}
`

const betaScript = `
name: beta
protocol: legacy
tools:
  - {name: echo, description: echo}
  - {name: only_beta, result: {text: b}}
resources:
  - {uri: "mem://shared", text: "from beta"}
prompts:
  - {name: greet, text: "Hello from beta"}
`

func TestSmokePrefix(t *testing.T) {
	t.Parallel()
	a, b := startFake(t, alphaScript), startFake(t, betaScript)
	g := startGateway(t, gwConfig("", a, b))
	for _, modern := range []bool{false, true} {
		c := connect(t, g.URL(), modern)
		names := toolNames(t, c)
		want := []string{"alpha_echo", "alpha_only_alpha", "beta_echo", "beta_only_beta"}
		if !slices.Equal(names, want) {
			t.Fatalf("modern=%v tools = %v, want %v", modern, names, want)
		}
		res, d := callTool(t, c, "beta_echo", map[string]any{"msg": "hi"})
		t.Logf("modern=%v beta_echo -> %q isError=%v in %v", modern, resultText(res), res.IsError, d)
		if res.IsError {
			t.Fatalf("unexpected error: %s", resultText(res))
		}
	}
}
