package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// DecodeAll reads a results document (Decode) or a set of them
// (history.ResultsSet, told by its "runs" field, as `chaos bench
// --profile A --profile B` writes), and returns its runs in order. A set
// is decoded as strictly as a document: its envelope has no unknown
// field, at least one run, the current schema version, and every run is
// checked by Decode, its errors placed at their byte offset in the file.
func DecodeAll(data []byte, file string) ([]*history.Results, error) {
	var probe struct {
		Runs json.RawMessage `json:"runs"`
	}
	if json.Unmarshal(data, &probe) != nil || probe.Runs == nil {
		r, err := Decode(data, file)
		if err != nil {
			return nil, err
		}
		return []*history.Results{r}, nil
	}
	var set struct {
		SchemaVersion  int               `json:"schemaVersion"`
		Started        time.Time         `json:"started"`
		HarnessVersion string            `json:"harnessVersion"`
		Interrupted    bool              `json:"interrupted"`
		Runs           []json.RawMessage `json:"runs"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&set); err != nil {
		var ie *InputError
		if err = jsonError(file, data, err); errors.As(err, &ie) {
			ie.Msg = "results set: " + ie.Msg
		}
		return nil, err
	}
	if off := skipSpace(data, dec.InputOffset()); off < int64(len(data)) {
		return nil, &InputError{file, off, "trailing data after the JSON document"}
	}
	if set.SchemaVersion != history.SchemaVersion {
		return nil, &InputError{file, 0, fmt.Sprintf("results set schemaVersion %d, want %d", set.SchemaVersion, history.SchemaVersion)}
	}
	if len(set.Runs) == 0 {
		return nil, &InputError{file, int64(bytes.Index(data, []byte(`"runs"`))), "results set: no runs"}
	}
	out := make([]*history.Results, 0, len(set.Runs))
	from := 0
	for i, raw := range set.Runs {
		at := from + bytes.Index(data[from:], raw)
		r, err := Decode(raw, file)
		var ie *InputError
		if errors.As(err, &ie) {
			ie.Offset += int64(at)
			ie.Msg = fmt.Sprintf("runs[%d]: %s", i, ie.Msg)
		}
		if err != nil {
			return nil, err
		}
		from = at + len(raw)
		out = append(out, r)
	}
	return out, nil
}
