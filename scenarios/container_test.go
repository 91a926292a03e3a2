package scenarios_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/containers"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
)

// runtime is the suite's backend runtime ($VMCP_CHAOS_RUNTIME).
var runtime string

// teardownBound is sc's teardown bound on the runtime $VMCP_CHAOS_RUNTIME
// names (read here: specs are built before BeforeSuite parses it).
func teardownBound(sc scenarios.Scenario) time.Duration {
	return scenarios.TeardownBound(sc, os.Getenv(containers.RuntimeEnv))
}

// prepareContainers, in BeforeSuite: when container scenarios are selected
// (or $VMCP_CHAOS_RUNTIME=container), probe the engine (bounded) and build
// the run's image once, so no spec pays for it and the engine's own
// goroutines predate every spec's leak snapshot. Without Docker the
// container scenarios skip with the probe's reason (fail with
// VMCP_CHAOS_REQUIRE_DOCKER=1, where this fails the suite).
func prepareContainers(ctx context.Context) {
	var err error
	runtime, err = scenarios.ParseRuntime(os.Getenv(containers.RuntimeEnv))
	Expect(err).NotTo(HaveOccurred(), "$%s", containers.RuntimeEnv)
	var selected []scenarios.Scenario
	for _, sc := range scenarios.Catalogue() {
		if Label(sc.Labels...).MatchesLabelFilter(GinkgoLabelFilter()) {
			selected = append(selected, sc)
		}
	}
	msg, err := scenarios.PrepareContainers(ctx, selected, runtime)
	Expect(err).NotTo(HaveOccurred(), "the Docker engine and the chaos image")
	if msg != "" {
		GinkgoWriter.Println(msg)
	}
}

// shutdownContainers, in AfterSuite: remove the run's image and anything
// left, then check nothing labelled with the run remains.
func shutdownContainers() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := containers.Get(ctx)
	if err != nil {
		return
	}
	Expect(containers.ShutdownDefault(ctx)).To(Succeed(), "remove the run's containers, networks and image")
	left, err := e.Leftovers(ctx, e.RunID())
	Expect(err).NotTo(HaveOccurred())
	Expect(left).To(BeEmpty(), "resources of run %s left behind", e.RunID())
}

// TestMutantNoDeadlineContainers: the no-deadline mutant (the reference
// gateway configured with an hour-long call timeout) run as a container
// fails the freeze and partition scenarios.
func TestMutantNoDeadlineContainers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := containers.Get(ctx); containers.IsSkip(err) {
		t.Skip(err.Error())
	} else if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = containers.ShutdownDefault(context.Background()) }) // after the parallel subtests
	mutant := &containers.Gateway{TargetName: "mutant-no-deadline", Caps: harness.DefaultReferenceCapabilities,
		ConfigTemplate: strings.Replace(harness.ChaosVMCPTemplate, "call: {{.CallTimeout}}", "call: 1h", 1)}
	if mutant.ConfigTemplate == harness.ChaosVMCPTemplate {
		t.Fatal("the template has no call timeout to replace")
	}
	// The frozen and partitioned calls wait for the client's deadline; the
	// bystander is judged on and passes (the scenario goes on). The two
	// topologies are independent: run at once (CI time).
	t.Run("freeze", func(t *testing.T) {
		t.Parallel()
		expectFails(t, "container-freeze/legacy", mutant,
			[]string{"frozen backend's call ends at the call timeout naming beta", "frozen backend's call ends at the call timeout naming gamma"},
			[]string{"before the freeze: beta answers", "alpha answers while beta and gamma are frozen"})
	})
	t.Run("partition", func(t *testing.T) {
		t.Parallel()
		expectFails(t, "container-partition/modern", mutant,
			[]string{"partition: a call to beta ends at the call timeout naming beta", "partition: idle keep-alive call to gamma bounded by call timeout"},
			[]string{"before the partition: gamma answers", "partition: alpha answers during the partition"})
	})
}
