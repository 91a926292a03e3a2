package fuzzseed

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestSeedsAreSmall: the shipped profiles and experiments give seeds
// under Max; a cut keeps the fields and the first item of each list, and
// drops the comments.
func TestSeedsAreSmall(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"../../profiles/*.yaml", "../../scenarios/testdata/profiles/*.yaml", "../../experiments/*.yaml"} {
		seeds := Glob(dir)
		if len(seeds) == 0 {
			t.Errorf("%s: no seed", dir)
		}
		for _, s := range seeds {
			if len(s) > Max {
				t.Errorf("%s: a seed of %d bytes", dir, len(s))
			}
			t.Logf("%s: a seed of %d bytes", dir, len(s))
		}
	}
	in := "# a comment\nname: gw # its name\nlist: [a, b, c]\nmaps:\n  - {x: 1, y: 2}\n  - {z: 3}\n"
	s, ok := YAML([]byte(in))
	if !ok || strings.Contains(string(s), "#") || strings.Contains(string(s), "b") || strings.Contains(string(s), "z") {
		t.Fatalf("cut %q: %q %v", in, s, ok)
	}
	var v map[string]any
	if err := yaml.Unmarshal(s, &v); err != nil || v["name"] != "gw" || len(v["list"].([]any)) != 1 {
		t.Errorf("cut seed %q: %v %v", s, v, err)
	}
	if _, ok := YAML([]byte("k: v\nbig: " + strings.Repeat("x", Max) + "\n")); ok {
		t.Error("a seed over Max")
	}
}
