package harness

import (
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// NewResults starts a results document for a run against t (nil
// allowed).
func NewResults(t targets.Target) *history.Results {
	r := &history.Results{SchemaVersion: history.SchemaVersion, Started: time.Now().Round(0), Scenarios: []history.ScenarioResult{}, Capabilities: []string{}}
	r.HarnessVersion = history.Version().String()
	if t != nil {
		r.Target = t.Name()
		for _, c := range t.Capabilities() {
			r.Capabilities = append(r.Capabilities, string(c))
		}
		if e, ok := t.(targets.Exec); ok {
			r.Profile = e.Profile
		}
	}
	return r
}
