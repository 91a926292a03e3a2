package scenarios

import (
	"encoding/json"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// FeatureSets are the distinct gateway feature sets that scenarios render
// into the config of target (scenarios it cannot run, lacking a
// capability they need, render nothing), in catalogue order: `chaos
// profile check` starts the gateway once with each, so a config the
// gateway refuses is caught before a run. Sets differ by any value (a
// breaker threshold, a health interval), not only by which features are
// on: the gateway may refuse a value.
func FeatureSets(all []Scenario, target targets.Target) []runtimes.FeatureSet {
	var out []runtimes.FeatureSet
	index := map[string]int{}
	for _, s := range all {
		if s.Topology == nil || len(target.Capabilities().Missing(s.Needs...)) > 0 {
			continue
		}
		f := s.Topology().Features
		if len(f.Names()) == 0 {
			continue
		}
		b, err := json.Marshal(f)
		if err != nil {
			continue // Features always marshal
		}
		key := string(b)
		if i, ok := index[key]; ok {
			out[i].Scenarios = append(out[i].Scenarios, s.Name)
			continue
		}
		index[key] = len(out)
		out = append(out, runtimes.FeatureSet{Name: strings.Join(f.Names(), ", "), Features: f, Scenarios: []string{s.Name}})
	}
	return out
}
