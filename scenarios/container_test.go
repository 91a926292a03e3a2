package scenarios_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
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
// VMCP_CHAOS_REQUIRE_DOCKER=1); the others run.
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
	if msg := scenarios.PrepareContainers(ctx, selected, runtime); msg != "" {
		GinkgoWriter.Println(msg)
	}
}

// shutdownContainers, in AfterSuite: every topology is torn down, so no
// container or network labelled with the run remains. (The run's image
// stays for the package's other tests; TestMain removes it and checks
// nothing at all is left.)
func shutdownContainers() {
	e := containers.Current()
	if e == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	left, err := e.Leftovers(ctx, e.RunID())
	Expect(err).NotTo(HaveOccurred())
	var topo []string
	for _, l := range left {
		if strings.HasPrefix(l, "container ") || strings.HasPrefix(l, "network ") {
			topo = append(topo, l)
		}
	}
	Expect(topo).To(BeEmpty(), "containers and networks of run %s left behind", e.RunID())
}

// TestMain removes the run's containers, networks and image (the engine
// is the process's, shared by the suite and the container mutants, so the
// image is built once) and fails the package if anything labelled with the
// run is left, a dangling image of its build included.
func TestMain(m *testing.M) {
	code := m.Run()
	runtimes.CleanupChaosBuild() // built by the tests that run the process scenarios
	if e := containers.Current(); e != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := containers.ShutdownDefault(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "remove the run's containers, networks and image: %v\n", err)
			code = 1
		}
		if left, err := e.Leftovers(ctx, e.RunID()); err != nil || len(left) > 0 {
			fmt.Fprintf(os.Stderr, "left behind by run %s: %v %v\n", e.RunID(), left, err)
			code = 1
		}
		cancel()
	}
	os.Exit(code)
}

// mutantClientTimeout is how long the container no-deadline mutant's clients wait for a
// call: past the bound the checks judge (ContainerCallBound), so a call the
// mutant leaves hanging still fails them as it would at the scenarios'
// own client timeout (8 s), in less time: every frozen or partitioned call
// to the mutant waits it out.
const mutantClientTimeout = scenarios.ContainerCallBound + time.Second

// mutantChildEnv=1 makes TestContainerMutantTable run its scenarios in
// this process: it is the child process the test starts.
const mutantChildEnv = "VMCP_CHAOS_TEST_MUTANT_CHILD"

// runChild runs the tests matching pattern in a child process of this test
// binary with env added, logs its output and passes on its verdict: a
// failure, a skip (with the child's reason) or a pass.
func runChild(t *testing.T, pattern string, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run="+pattern, "-test.count=1", "-test.v", "-test.timeout=9m")
	cmd.Env = append(os.Environ(), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) } // the child removes its containers
	cmd.WaitDelay = 30 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("child process (%s):\n%s", pattern, out)
	if err != nil {
		t.Fatalf("child process: %v", err)
	}
	if before, _, ok := strings.Cut(string(out), "--- SKIP: "); ok && !strings.Contains(string(out), "--- PASS: ") {
		lines := strings.Split(strings.TrimSpace(before), "\n")
		t.Skipf("skipped in the child process: %s", strings.TrimSpace(lines[len(lines)-1]))
	}
}
