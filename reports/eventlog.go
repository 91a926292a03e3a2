package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// attachEventLog reads the event log a bounded results file names
// (history.Results.EventsFile, a file beside it) and puts every event
// back into r. A missing log is no error: r keeps its evidence, and the
// report says how many events are not in it and which file held them. A
// log that is there but unreadable, malformed or of another run is an
// error naming it.
func attachEventLog(resultsPath string, r *history.Results) error {
	for i, s := range r.Scenarios {
		if s.EventsOmitted < 0 {
			return &InputError{resultsPath, 0, fmt.Sprintf("scenarios[%d].eventsOmitted: negative (%d)", i, s.EventsOmitted)}
		}
	}
	if r.EventsFile == "" {
		return nil
	}
	if r.EventsFile != filepath.Base(r.EventsFile) || r.EventsFile == ".." || r.EventsFile == "." {
		return &InputError{resultsPath, 0, fmt.Sprintf("eventsFile %q: want a file name beside the results, not a path", r.EventsFile)}
	}
	path := filepath.Join(filepath.Dir(resultsPath), r.EventsFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := checkUTF8(data, path); err != nil {
		return err
	}
	var log history.EventLog
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&log); err != nil {
		return jsonError(path, data, err)
	}
	if off := skipSpace(data, dec.InputOffset()); off < int64(len(data)) {
		return &InputError{path, off, "trailing data after the JSON document"}
	}
	if err := checkValues(data, path); err != nil {
		return err
	}
	if err := r.AttachEvents(&log); err != nil {
		return &InputError{path, 0, err.Error()}
	}
	return nil
}
