package scenarios_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// ResultsEnv names the environment variable holding the path the JSON
// results are written to (the -vmcp-chaos.results flag wins).
const ResultsEnv = "VMCP_CHAOS_RESULTS"

var resultsPath = flag.String("vmcp-chaos.results", "", "write the JSON results to this path (default $"+ResultsEnv+")")

func TestScenarios(t *testing.T) {
	// Beside the package's other tests: each scenario checks its own
	// (labelled) goroutines, TestMain the rest.
	t.Parallel()
	RegisterFailHandler(Fail)
	previewPool(PreviewSpecs(suiteName))
	RunSpecs(t, suiteName)
}

const suiteName = "vMCP acceptance scenarios"

var (
	resultsMu sync.Mutex
	results   *history.Results
)

var target targets.Target

// starts is the suite's: a gateway that cannot start twice in a row fails
// the remaining specs at once, with the reason.
var starts = &targets.StartGuard{}

var _ = BeforeSuite(func(ctx SpecContext) {
	cfg := targets.TargetConfigFromEnv()
	// Build the chaos binary (for process backends and an exec target
	// running chaos vmcp) once, here, so no spec's SpecTimeout pays for a
	// compile under load. $CHAOS_BIN skips the build.
	if cfg.NeedsChaosBinary() || Label(scenarios.LabelProcess).MatchesLabelFilter(GinkgoLabelFilter()) {
		_, err := runtimes.BuildChaos(ctx)
		Expect(err).NotTo(HaveOccurred(), "build the chaos binary")
	}
	var err error
	target, err = cfg.Target(func() (string, error) { return runtimes.BuildChaos(ctx) })
	Expect(err).NotTo(HaveOccurred(), "the target from the VMCP_CHAOS_* environment")
	GinkgoWriter.Printf("target %s (capabilities: %s)\n", target.Name(), target.Capabilities())
	results = harness.NewResults(target)
	prepareContainers(ctx)
	_, err = suiteParallel()
	Expect(err).NotTo(HaveOccurred())
	startPool(runConfig())
}, NodeTimeout(4*time.Minute))

// specRecovery is the recovery window the specs' timeouts allow for (they
// are set before BeforeSuite makes the target): the default, or, for a
// profile's gateway, the most a profile may declare.
func specRecovery() time.Duration {
	if os.Getenv(targets.ProfileEnv) != "" {
		return targets.MaxRecovery
	}
	return targets.DefaultRecovery
}

// runConfig is how the suite runs each scenario.
func runConfig() runner.RunConfig {
	return runner.RunConfig{Target: target, CheckLeaks: true, Runtime: runtime, Starts: starts, Gate: testGate}
}

var _ = AfterSuite(func() {
	path := *resultsPath
	if path == "" {
		path = os.Getenv(ResultsEnv)
	}
	stopPool()
	shutdownContainers()
	if path == "" {
		return
	}
	resultsMu.Lock()
	defer resultsMu.Unlock()
	Expect(results.WriteFile(path)).To(Succeed())
	GinkgoWriter.Printf("results written to %s\n", path)
})

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
				It(name, Label(sc.Labels...), SpecTimeout(harness.MaxWall(sc.Budget(), specRecovery())+teardownBound(sc)+30*time.Second+slotWait), func(ctx SpecContext) {
					rec := runSpec(ctx, sc, runConfig())
					resultsMu.Lock()
					results.Add(rec)
					resultsMu.Unlock()
					res := rec.Result()
					if len(res.Figures) > 0 {
						AddReportEntry("figures", res.Figures, ReportEntryVisibilityFailureOrVerbose)
					}
					if failed, judged := res.CheckCounts(); judged > 0 {
						AddReportEntry("checks", fmt.Sprintf("%d/%d failed", failed, judged), ReportEntryVisibilityFailureOrVerbose)
					}
					if len(res.SkippedChecks) > 0 {
						// A partial pass: say so where a passed spec is seen.
						AddReportEntry("checks not applicable", res.SkippedChecks)
						GinkgoWriter.Printf("checks not applicable: %s\n", strings.Join(res.SkippedChecks, "; "))
					}
					switch res.Verdict {
					case history.VerdictSkipped:
						Skip(res.Reason)
					case history.VerdictFailed, history.VerdictInconclusive:
						Fail(strings.ToUpper(string(res.Verdict)) + ": " + res.Reason)
					}
				})
			}
		})
	}
})
