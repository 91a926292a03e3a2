package history

import (
	"encoding/json"
	"io"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/internal/atomicfile"
	"github.com/vmcp-chaos/vmcp-chaos/internal/redact"
)

// ResultsSet is one JSON document holding several runs side by side: the
// same scenarios against several targets in one session (`chaos bench
// --profile A --profile B`). Each run is a whole results document of one
// target; `chaos report` renders a set's runs as columns of one
// scorecard. It is told from a Results document by its "runs" field.
type ResultsSet struct {
	// SchemaVersion is always SchemaVersion when written (each run's too).
	SchemaVersion int `json:"schemaVersion"`
	// Started is when the first run started (wall clock).
	Started time.Time `json:"started"`
	// HarnessVersion is the version of the harness that wrote the set.
	HarnessVersion string `json:"harnessVersion,omitempty"`
	// Interrupted is set when the session was cut short: the runs after
	// the interrupted one are missing.
	Interrupted bool `json:"interrupted,omitempty"`
	// Runs are the runs, in the order they ran.
	Runs []*Results `json:"runs"`
}

// NewResultsSet starts a set of runs.
func NewResultsSet() *ResultsSet {
	return &ResultsSet{SchemaVersion: SchemaVersion, Started: time.Now().Round(0), HarnessVersion: Version().String(), Runs: []*Results{}}
}

// Failed reports whether any run failed (Results.Failed).
func (s *ResultsSet) Failed() bool {
	for _, r := range s.Runs {
		if r.Failed() {
			return true
		}
	}
	return false
}

// WriteJSON writes the set as indented JSON, setting the schema versions.
func (s *ResultsSet) WriteJSON(w io.Writer) error {
	s.SchemaVersion = SchemaVersion
	for _, r := range s.Runs {
		r.SchemaVersion = SchemaVersion
		if r.Capabilities == nil {
			r.Capabilities = []string{}
		}
	}
	rw := redact.NewWriter(w) // as Results.WriteJSON
	enc := json.NewEncoder(rw)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	return rw.Flush()
}

// WriteFile writes the set to path (see WriteJSON).
func (s *ResultsSet) WriteFile(path string) error {
	return atomicfile.Write(path, s.WriteJSON) // whole or not at all, as Results.WriteFile
}
