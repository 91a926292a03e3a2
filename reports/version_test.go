package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// TestHarnessVersionPerRun: each run's summary and its column of the
// side-by-side scorecard name the harness version that wrote it; a file
// from before harnessVersion existed says "not recorded".
func TestHarnessVersionPerRun(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "outcomes.json"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := history.ReadResults(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	const version = "v1.2.3 (commit 0123456789ab)"
	res.HarnessVersion = version
	newer := filepath.Join(t.TempDir(), "newer.json")
	if err := res.WriteFile(newer); err != nil {
		t.Fatal(err)
	}
	in, err := Load(filepath.Join("testdata", "run-reference.json"), newer)
	if err != nil {
		t.Fatal(err)
	}
	b := render(t, in)
	p := checkStructure(t, b, in)
	head := text(find(p.ids["compare"], "thead", "")[0])
	old, cur := strings.Index(head, "harness not recorded"), strings.Index(head, "harness "+version)
	if old < 0 || cur < 0 || old > cur {
		t.Errorf("scorecard columns do not name each run's harness (old first, then %s): %q", version, head)
	}
	var summaries []string
	for _, dl := range find(p.root, "dl", "summary") {
		summaries = append(summaries, text(dl))
	}
	if len(summaries) != 2 || !strings.Contains(summaries[0], "harnessnot recorded") || !strings.Contains(summaries[1], "harness"+version) {
		t.Errorf("run summaries: %q", summaries)
	}
}
