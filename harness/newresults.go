package harness

import (
	"time"
)

// NewResults starts a results document for a run against t (nil
// allowed).
func NewResults(t Target) *Results {
	r := &Results{SchemaVersion: SchemaVersion, Started: time.Now().Round(0), Scenarios: []ScenarioResult{}, Capabilities: []string{}}
	r.HarnessVersion = Version().String()
	if t != nil {
		r.Target = t.Name()
		for _, c := range t.Capabilities() {
			r.Capabilities = append(r.Capabilities, string(c))
		}
		if e, ok := t.(Exec); ok {
			r.Profile = e.Profile
		}
	}
	return r
}
