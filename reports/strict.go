package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// Verdicts a results document may hold: the harness's own.
var (
	scenarioVerdicts = []string{string(history.VerdictPassed), string(history.VerdictFailed), string(history.VerdictSkipped),
		string(history.VerdictInconclusive), string(history.VerdictInterrupted)}
	checkVerdicts = []string{string(history.CheckPassed), string(history.CheckFailed), string(history.CheckNotApplicable),
		string(history.CheckInconclusive)}
)

// InputError is a results document that cannot be read: the file and the
// byte offset (from 0) of what is wrong.
type InputError struct {
	File   string
	Offset int64
	Msg    string
}

func (e *InputError) Error() string { return fmt.Sprintf("%s: byte %d: %s", e.File, e.Offset, e.Msg) }

// Decode reads one results document strictly: it must be valid UTF-8, one
// JSON value with nothing after it, of the current schema version, with
// known scenario and check verdicts and no negative time (a *Ms field).
// Every error is an *InputError naming file and the byte offset.
func Decode(data []byte, file string) (*history.Results, error) {
	if err := checkUTF8(data, file); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var r history.Results
	if err := dec.Decode(&r); err != nil {
		return nil, jsonError(file, data, err)
	}
	if off := skipSpace(data, dec.InputOffset()); off < int64(len(data)) {
		return nil, &InputError{file, off, "trailing data after the JSON document"}
	}
	if r.SchemaVersion != history.SchemaVersion {
		return nil, &InputError{file, 0, fmt.Sprintf("results schemaVersion %d, want %d", r.SchemaVersion, history.SchemaVersion)}
	}
	if err := checkValues(data, file); err != nil {
		return nil, err
	}
	return &r, nil
}

// checkUTF8 places the first byte of data that is not UTF-8.
func checkUTF8(data []byte, file string) error {
	if utf8.Valid(data) {
		return nil
	}
	off := 0
	for off < len(data) {
		r, n := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		off += n
	}
	return &InputError{file, int64(off), "invalid UTF-8"}
}

// jsonError places a decoding error.
func jsonError(file string, data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return &InputError{file, max(se.Offset-1, 0), "not JSON: " + se.Error()} // Offset counts the bad byte
	case errors.As(err, &te):
		return &InputError{file, te.Offset, fmt.Sprintf("%s: want %s, got a JSON %s", te.Field, te.Type, te.Value)}
	case errors.Is(err, io.EOF):
		return &InputError{file, 0, "empty: not a results document"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &InputError{file, int64(len(data)), "the JSON document ends too early"}
	}
	return &InputError{file, 0, err.Error()}
}

func skipSpace(data []byte, off int64) int64 {
	for off < int64(len(data)) && strings.IndexByte(" \t\r\n", data[off]) >= 0 {
		off++
	}
	return off
}

// frame is one open object or array while checkValues walks the JSON.
type frame struct {
	object bool
	key    string // the key whose value is read next (objects)
	path   string // the path of this container, e.g. scenarios[].checks[]
	index  int
}

// checkValues walks the document's tokens and checks the values the
// struct decoding lets through: verdicts outside the known sets and
// negative times. Free-form maps (figures, meta) are not judged.
func checkValues(data []byte, file string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*frame
	for {
		start := skipSpace(data, dec.InputOffset())
		for start < int64(len(data)) && (data[start] == ':' || data[start] == ',') {
			start = skipSpace(data, start+1)
		}
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return jsonError(file, data, err)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key == "" {
			if k, ok := tok.(string); ok { // a key
				top.key = k
				continue
			}
		}
		// A value (or the end of a container).
		field := ""
		if top != nil {
			if top.object {
				field = top.path + "." + top.key
			} else {
				field = top.path + "[]"
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				stack = append(stack, &frame{object: t == '{', path: field})
				continue
			}
			stack = stack[:len(stack)-1]
		case string:
			if msg := badVerdict(field, t); msg != "" {
				return &InputError{file, start, msg}
			}
		case json.Number:
			if strings.HasSuffix(field, "Ms") && !freeForm(field) && strings.HasPrefix(t.String(), "-") {
				return &InputError{file, start, fmt.Sprintf("%s: negative time %s ms", strings.TrimPrefix(field, "."), t)}
			}
		}
		if len(stack) > 0 {
			if p := stack[len(stack)-1]; p.object {
				p.key = ""
			} else {
				p.index++
			}
		}
	}
}

// freeForm reports whether field lies in a map whose keys are not the
// schema's (figures, meta).
func freeForm(field string) bool {
	return strings.Contains(field, ".figures.") || strings.Contains(field, ".meta.")
}

// badVerdict says what is wrong with a verdict value at field, or "".
func badVerdict(field, v string) string {
	var known []string
	switch field {
	case ".scenarios[].verdict":
		known = scenarioVerdicts
	case ".scenarios[].checks[].verdict":
		known = checkVerdicts
	default:
		return ""
	}
	for _, k := range known {
		if v == k {
			return ""
		}
	}
	return fmt.Sprintf("%s: unknown verdict %q (want %s)", strings.TrimPrefix(field, "."), v, strings.Join(known, ", "))
}
