package scenarios_test

import (
	"context"
	"flag"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
)

// ResultsEnv names the environment variable holding the path the JSON
// results are written to (the -vmcp-chaos.results flag wins).
const ResultsEnv = "VMCP_CHAOS_RESULTS"

var resultsPath = flag.String("vmcp-chaos.results", "", "write the JSON results to this path (default $"+ResultsEnv+")")

func TestScenarios(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "vMCP acceptance scenarios")
}

var (
	resultsMu sync.Mutex
	results   *harness.Results
)

var target harness.Target

var _ = BeforeSuite(func() {
	target = suiteTarget()
	results = harness.NewResults(target)
})

var _ = AfterSuite(func() {
	path := *resultsPath
	if path == "" {
		path = os.Getenv(ResultsEnv)
	}
	harness.CleanupChaosBuild()
	if path == "" {
		return
	}
	resultsMu.Lock()
	defer resultsMu.Unlock()
	Expect(results.WriteFile(path)).To(Succeed())
	GinkgoWriter.Printf("results written to %s\n", path)
})

// CapabilitiesEnv names an environment variable that, when set, replaces
// the capabilities the reference target declares (e.g. "session-api"), to
// see how the suite reports a target that lacks some: those scenarios are
// skipped with the reason.
const CapabilitiesEnv = "VMCP_CHAOS_CAPABILITIES"

// suiteTarget is the gateway under test: the reference vMCP.
func suiteTarget() harness.Target {
	if s, ok := os.LookupEnv(CapabilitiesEnv); ok {
		caps, err := harness.ParseCapabilities(s)
		Expect(err).NotTo(HaveOccurred(), "$%s", CapabilitiesEnv)
		if caps == nil {
			caps = harness.Capabilities{}
		}
		return harness.Reference{Caps: caps}
	}
	return harness.Reference{}
}

var _ = Describe("vMCP", func() {
	groups := map[string][]scenarios.Scenario{}
	var order []string
	for _, sc := range scenarios.Catalogue() {
		if _, ok := groups[sc.Group]; !ok {
			order = append(order, sc.Group)
		}
		groups[sc.Group] = append(groups[sc.Group], sc)
	}
	for _, group := range order {
		Describe(group, func() {
			for _, sc := range groups[group] {
				name := strings.TrimPrefix(sc.Name, group+"/")
				It(name, Label(sc.Labels...), SpecTimeout(sc.Timeout+harness.DefaultEnvCloseTimeout+30*time.Second), func(ctx SpecContext) {
					if sc.HasLabel(scenarios.LabelProcess) {
						bctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
						defer cancel()
						_, err := harness.BuildChaos(bctx)
						Expect(err).NotTo(HaveOccurred(), "build the chaos binary for process backends")
					}
					rec := scenarios.Run(ctx, sc, scenarios.RunConfig{Target: target, CheckLeaks: true})
					resultsMu.Lock()
					results.Add(rec)
					resultsMu.Unlock()
					res := rec.Result()
					if len(res.Figures) > 0 {
						AddReportEntry("figures", res.Figures, ReportEntryVisibilityFailureOrVerbose)
					}
					switch res.Verdict {
					case harness.VerdictSkipped:
						Skip(res.Reason)
					case harness.VerdictFailed:
						Fail(res.Reason)
					}
				})
			}
		})
	}
})
