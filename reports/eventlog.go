package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/internal/boundedread"
	"github.com/vmcp-chaos/vmcp-chaos/internal/redact"
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
	data, err := boundedread.File(path, boundedread.EventLog)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := checkUTF8(data, path); err != nil {
		return err
	}
	log, err := decodeEventLog(data, path)
	if err != nil {
		return err
	}
	// Redacted once read (whatever wrote it: a log of before redaction
	// holds credentials as they were), decoded again only when that
	// changed it; errors above name the file's own byte offsets.
	if red := redact.Text(string(data)); red != string(data) {
		if log, err = decodeEventLog([]byte(red), path); err != nil {
			return err
		}
	}
	if err := r.AttachEvents(log); err != nil {
		return &InputError{path, 0, err.Error()}
	}
	return nil
}

// decodeEventLog decodes an event log strictly: one JSON document, its
// values checked (checkValues).
func decodeEventLog(data []byte, path string) (*history.EventLog, error) {
	var log history.EventLog
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&log); err != nil {
		return nil, jsonError(path, data, err)
	}
	if off := skipSpace(data, dec.InputOffset()); off < int64(len(data)) {
		return nil, &InputError{path, off, "trailing data after the JSON document"}
	}
	if err := checkValues(data, path); err != nil {
		return nil, err
	}
	return &log, nil
}
