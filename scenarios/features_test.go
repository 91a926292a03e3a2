package scenarios_test

import (
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
)

// TestFeatureSets: the catalogue's distinct feature sets for a target
// with every capability include the breaker scenario's (metrics always
// asked for, as toolhive learnt), and a target lacking the breaker gets
// none of the sets whose scenarios need it.
func TestFeatureSets(t *testing.T) {
	t.Parallel()
	all := scenarios.FeatureSets(scenarios.Catalogue(), targets.Reference{})
	var names []string
	for _, s := range all {
		names = append(names, s.Name)
		t.Logf("%s: %v", s.Name, s.Scenarios)
	}
	joined := strings.Join(names, " | ")
	for _, want := range []string{"breaker, metrics", "optimizer", "keepalive"} {
		if !strings.Contains(joined, want) {
			t.Errorf("feature sets %q lack %q", joined, want)
		}
	}
	none := scenarios.FeatureSets(scenarios.Catalogue(), targets.Reference{Caps: targets.Capabilities{targets.CapHealthAPI}})
	for _, s := range none {
		if strings.Contains(s.Name, "breaker") || strings.Contains(s.Name, "optimizer") {
			t.Errorf("a target without the breaker gets feature set %q (%v)", s.Name, s.Scenarios)
		}
	}
}
