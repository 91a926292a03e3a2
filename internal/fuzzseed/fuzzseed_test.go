package fuzzseed

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestSeedsAreSmall: the shipped profiles and experiments give seeds of
// at most Max bytes, each holding the fields kept and one more; comments
// go, lists are cut to their first item, an experiment's parameters are
// inlined.
func TestSeedsAreSmall(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		glob    string
		prepare func([]byte) []byte
		keep    []string
	}{
		{"../../profiles/*.yaml", nil, []string{"name", "command"}},
		{"../../scenarios/testdata/profiles/*.yaml", nil, []string{"name", "command"}},
		{"../../experiments/*.yaml", Inline, []string{"title"}},
	} {
		seeds := Glob(c.glob, c.prepare, c.keep...)
		if len(seeds) < 4 {
			t.Errorf("%s: %d seeds", c.glob, len(seeds))
		}
		for _, s := range seeds {
			if len(s) > Max || !strings.HasPrefix(string(s), c.keep[0]+":") || strings.Contains(string(s), "#") || strings.Contains(string(s), "${") {
				t.Errorf("%s: seed of %d bytes:\n%s", c.glob, len(s), s)
			}
		}
		t.Logf("%s: %d seeds", c.glob, len(seeds))
	}
	in := "# a comment\nname: gw # its name\nlist: [a, b, c]\nmaps:\n  x: [1, 2]\n  z: 3\n"
	seeds := Split([]byte(in), "name")
	if len(seeds) != 2 {
		t.Fatalf("split %q: %q", in, seeds)
	}
	var v map[string]any
	if err := yaml.Unmarshal(seeds[0], &v); err != nil || v["name"] != "gw" || len(v["list"].([]any)) != 1 || len(v) != 2 {
		t.Errorf("first seed %q: %v %v", seeds[0], v, err)
	}
	if s := Inline([]byte("parameters: {a: x}\ntitle: ${a}\n")); string(s) != "title: x\n" {
		t.Errorf("inlined: %q", s)
	}
	if got := Split([]byte("name: gw\nbig: "+strings.Repeat("x", Max)+"\n"), "name"); len(got) != 0 {
		t.Errorf("a seed over Max: %q", got)
	}
}
