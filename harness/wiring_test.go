package harness

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// TestResultsCarryHarnessVersion: a results document (a run, a journal, a
// bench file: all start with NewResults) names the harness that wrote it,
// through a JSON round trip.
func TestResultsCarryHarnessVersion(t *testing.T) {
	r := NewResults(nil)
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"harnessVersion": "`+history.Version().String()+`"`) {
		t.Fatalf("results lack the harness version %q:\n%s", history.Version(), buf.String())
	}
	back, err := history.ReadResults(&buf)
	if err != nil || back.HarnessVersion != history.Version().String() {
		t.Fatalf("read back: %q %v", back.HarnessVersion, err)
	}
}
