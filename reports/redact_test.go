package reports

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// oldCanary matches the canary credentials of TestReportOfUnredactedFiles.
var oldCanary = regexp.MustCompile(`CANARY[A-Z0-9]*`)

// TestReportOfUnredactedFiles: files written before redaction existed (a
// journal whose target is a URL with user:password, a results file and
// its event log with credentials in error texts) are redacted once read:
// the loaded results and the page show no credential, and the page still
// shows where they were ("[redacted]@host").
func TestReportOfUnredactedFiles(t *testing.T) {
	t.Parallel()
	r := load(t, "outcomes.json")[0].Results
	const host = "HOSTPLACE" // becomes user:password@host once written
	r.Target = "http://" + host + "/mcp"
	s := &r.Scenarios[0]
	s.Reason = "gateway http://" + host + "/mcp: refused"
	for i := range 400 { // more calls than the results keep: most only in the event log
		s.Events = append(s.Events, history.Event{Seq: 100000 + i, Kind: history.EventCall, At: s.Duration,
			Call: &history.CallRecord{Method: "tools/call", Target: "beta_echo", Outcome: history.OutcomeError, Error: "Post \"http://" + host + "/mcp\": refused; password=CANARYPASSWORDFIELD"}})
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "old.json")
	if err := r.WriteSplit(path); err != nil {
		t.Fatal(err)
	}
	// Make the files what an old harness wrote: credentials as given.
	for _, p := range []string{path, history.EventsPath(path)} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		data = []byte(strings.ReplaceAll(strings.ReplaceAll(string(data), host, "old:CANARYOLDPW@127.0.0.1:9"),
			"password=[redacted]", "password=CANARYPASSWORDFIELD"))
		if !oldCanary.Match(data) {
			t.Fatalf("%s: no canary planted", p)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	in, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got := in[0].Results
	if got.Scenarios[0].EventsOmitted != 0 || len(got.Scenarios[0].Events) < 400 {
		t.Fatalf("the event log was not attached: %d events, %d omitted", len(got.Scenarios[0].Events), got.Scenarios[0].EventsOmitted)
	}
	loaded, _ := json.Marshal(got) // not WriteJSON: it redacts by itself
	page := render(t, in)
	for what, text := range map[string]string{"loaded results": string(loaded), "page": string(page)} {
		if m := oldCanary.FindAllString(text, -1); len(m) > 0 {
			t.Errorf("%s shows credentials %q", what, m)
		}
		if !strings.Contains(text, "[redacted]@127.0.0.1:9") {
			t.Errorf("%s: the target is not shown redacted", what)
		}
	}
	if got.Target != "http://[redacted]@127.0.0.1:9/mcp" {
		t.Errorf("target %q", got.Target)
	}
}
