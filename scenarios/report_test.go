package scenarios_test

import (
	"os"

	. "github.com/onsi/ginkgo/v2"

	"github.com/vmcp-chaos/vmcp-chaos/reports"
)

// ReportEnv names the environment variable holding the path the suite
// writes its HTML report to (see reports/README.md).
const ReportEnv = "VMCP_CHAOS_REPORT"

var _ = ReportAfterSuite("HTML report", func(Report) {
	path := os.Getenv(ReportEnv)
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if path == "" || results == nil {
		return
	}
	if err := reports.WriteFile(path, []reports.Input{{Name: "go test ./scenarios", Results: results}}, reports.Options{}); err != nil {
		Fail("write the HTML report: " + err.Error())
	}
	GinkgoWriter.Printf("HTML report written to %s\n", path)
})
