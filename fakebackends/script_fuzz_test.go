package fakebackends

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// scCheckErr fails unless err is a *ScriptError naming file and not hiding a
// recovered panic.
func scCheckErr(t *testing.T, what string, err error, file string) {
	t.Helper()
	var se *ScriptError
	if !errors.As(err, &se) {
		t.Fatalf("%s: error %T is not a *ScriptError: %v", what, err, err)
	}
	if se.File != file {
		t.Fatalf("%s: error names file %q, want %q: %v", what, se.File, file, err)
	}
	if strings.Contains(se.Msg, "internal error") {
		t.Fatalf("%s: decoder panicked: %v", what, err)
	}
}

// FuzzParseScript checks that no input makes the decoder panic, that every
// error is a *ScriptError with a file name, and that whatever parses
// survives a YAML and a JSON round trip unchanged.
func FuzzParseScript(f *testing.F) {
	files, _ := filepath.Glob("examples/*")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(scFullScript))
	for _, tc := range scErrCases {
		f.Add([]byte(tc.src))
	}
	// Regressions found by fuzzing.
	f.Add([]byte("name: 0\ntools: []"))
	f.Add([]byte("name: a\ntools: [{name: t, result: {json: {\"<<\": 1}}}]\n"))
	f.Add([]byte(`[{"kind":"stall"},{"kind":"latency","delay":"1s","jitter":"2ms","probability":0.5}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScript(data, "fuzz.yaml")
		if err != nil {
			scCheckErr(t, "ParseScript", err, "fuzz.yaml")
		} else {
			scClearLines(s.Faults)
			y, err := yaml.Marshal(s)
			if err != nil {
				t.Fatalf("yaml.Marshal: %v", err)
			}
			back, err := ParseScript(y, "again.yaml")
			var se *ScriptError
			switch {
			case errors.As(err, &se) && strings.Contains(se.Msg, "merge keys"):
				// yaml.v3 writes a literal "<<" key of free-form data
				// unquoted, which then reads as a merge key.
			case err != nil:
				t.Fatalf("YAML round trip: %v\n%s", err, y)
			default:
				scClearLines(back.Faults)
				if !reflect.DeepEqual(back, s) {
					t.Fatalf("YAML round trip differs:\n%s", y)
				}
			}
			j, err := json.Marshal(s)
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			back, err = ParseScript(j, "again.json")
			if err != nil {
				t.Fatalf("JSON round trip: %v\n%s", err, j)
			}
			scClearLines(back.Faults)
			if !reflect.DeepEqual(back, s) {
				t.Fatalf("JSON round trip differs:\n%s", j)
			}
		}
		faults, err := ParseFaults(data, "PUT /faults")
		if err != nil {
			scCheckErr(t, "ParseFaults", err, "PUT /faults")
			return
		}
		scClearLines(faults)
		j, err := json.Marshal(faults)
		if err != nil {
			t.Fatalf("json.Marshal(faults): %v", err)
		}
		back, err := ParseFaults(j, "GET /faults")
		if err != nil {
			t.Fatalf("faults JSON round trip: %v\n%s", err, j)
		}
		scClearLines(back)
		if !reflect.DeepEqual(back, faults) {
			t.Fatalf("faults JSON round trip differs:\n%s", j)
		}
	})
}
