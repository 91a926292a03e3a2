package history_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/internal/fullrun"
)

// TestWriteSplitBoundsTheResults: a run of the full catalogue is written
// as bounded results (under 2 MB when every check passes; the size when
// every check fails is logged and held under 3 MB) and a complete event
// log beside them. Every check and finding is in the results, every
// check's evidence call too; the events left out are counted per
// scenario; the log holds every event, and attached it gives back the
// run as recorded.
func TestWriteSplitBoundsTheResults(t *testing.T) {
	for _, tc := range []struct {
		failed bool
		bound  int64
	}{{false, 2 << 20}, {true, 3 << 20}} {
		r := fullrun.Results("gateway", tc.failed)
		dir := t.TempDir()
		path := filepath.Join(dir, "results.json")
		if err := r.WriteSplit(path); err != nil {
			t.Fatal(err)
		}
		full := filepath.Join(dir, "full.json")
		if err := r.WriteFile(full); err != nil {
			t.Fatal(err)
		}
		size, logSize, fullSize := fileSize(t, path), fileSize(t, history.EventsPath(path)), fileSize(t, full)
		t.Logf("full catalogue (%d scenarios), every check failed %v: results %d bytes, event log %d bytes; all in one file %d bytes",
			len(r.Scenarios), tc.failed, size, logSize, fullSize)
		if size > tc.bound {
			t.Errorf("results: %d bytes, over %d", size, tc.bound)
		}
		var bounded history.Results
		readJSON(t, path, &bounded)
		if bounded.EventsFile != "results.events.json" {
			t.Errorf("eventsFile %q", bounded.EventsFile)
		}
		if !reflect.DeepEqual(bounded.Findings, r.Findings) || len(r.Findings) == 0 != !tc.failed {
			t.Errorf("the bounded results' findings differ from the run's (%d, %d)", len(bounded.Findings), len(r.Findings))
		}
		for i, s := range bounded.Scenarios {
			orig := r.Scenarios[i]
			if len(s.Checks) != len(orig.Checks) || len(s.Events)+s.EventsOmitted != len(orig.Events) || len(s.Events) > history.MaxKeptEvents {
				t.Errorf("%s: %d of %d checks, %d events kept + %d omitted of %d", s.Name, len(s.Checks), len(orig.Checks), len(s.Events), s.EventsOmitted, len(orig.Events))
			}
			kept := map[int]bool{}
			for _, e := range s.Events {
				kept[e.Seq] = true
			}
			for _, c := range s.Checks {
				for _, seq := range c.Calls {
					if !kept[seq] && len(s.Events) < history.MaxKeptEvents {
						t.Errorf("%s: check %q: evidence call #%d not kept", s.Name, c.Name, seq)
					}
				}
			}
		}
		var log history.EventLog
		readJSON(t, history.EventsPath(path), &log)
		if err := bounded.AttachEvents(&log); err != nil {
			t.Fatal(err)
		}
		var whole history.Results
		readJSON(t, full, &whole)
		if !reflect.DeepEqual(bounded.Scenarios, whole.Scenarios) {
			t.Error("the results with the event log attached differ from the run written whole")
		}
	}
}

// TestAttachEventsRefusesAnotherRun: an event log of another run (started
// at another time, other scenarios, fewer events than the results keep)
// is refused, saying why.
func TestAttachEventsRefusesAnotherRun(t *testing.T) {
	r := fullrun.Results("gateway", false)
	r.Scenarios = r.Scenarios[:3]
	log := func() *history.EventLog {
		l := &history.EventLog{SchemaVersion: history.SchemaVersion, Started: r.Started}
		for _, s := range r.Scenarios {
			l.Scenarios = append(l.Scenarios, history.ScenarioEvents{Name: s.Name, Events: s.Events})
		}
		return l
	}
	other := log()
	other.Started = other.Started.Add(1)
	renamed := log()
	renamed.Scenarios[1].Name = "x"
	short := log()
	short.Scenarios[2].Events = short.Scenarios[2].Events[:1]
	missing := log()
	missing.Scenarios = missing.Scenarios[:2]
	for name, l := range map[string]*history.EventLog{"started": other, "name": renamed, "events": short, "scenarios": missing} {
		if err := r.AttachEvents(l); err == nil {
			t.Errorf("%s: an event log of another run attached", name)
		}
	}
	if err := r.AttachEvents(log()); err != nil {
		t.Errorf("the run's own log: %v", err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
