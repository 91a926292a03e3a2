package scenarios_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testpar"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
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
	runtime, err = runner.ParseRuntime(os.Getenv(containers.RuntimeEnv))
	Expect(err).NotTo(HaveOccurred(), "$%s", containers.RuntimeEnv)
	var selected []scenarios.Scenario
	for _, sc := range scenarios.Catalogue() {
		if Label(sc.Labels...).MatchesLabelFilter(GinkgoLabelFilter()) {
			selected = append(selected, sc)
		}
	}
	if msg := runner.PrepareContainers(ctx, selected, runtime); msg != "" {
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

// TestMain runs the package's tests side by side (every top-level test is
// parallel; -test.parallel defaults to parallelTests, and testGate bounds
// the scenarios they run at once), then removes the run's containers,
// networks and image (the engine is the process's, shared by the suite
// and the container mutants, so the image is built once) and the fixture
// gateway's build. It fails the package if anything labelled with the run
// is left, a dangling image of its build included, or if a goroutine
// started during the tests outlived them: each scenario checks its own
// (labelled) goroutines; this catches those no scenario owns.
func TestMain(m *testing.M) {
	// Through the flag's Value (testpar), so the flag does not count as
	// set: Ginkgo refuses a suite run with -test.parallel (it does not
	// parallelize specs; here the tests beside the suite use it).
	testpar.Default(parallelTests)
	leaks := runtimes.LeakSnapshot(
		// Idle keep-alive connections of shared transports (the engine's
		// client's among them), whatever their top frame.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		// The engine's signal handler lives as long as the process.
		goleak.IgnoreAnyFunction("github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers.installSignalCleanup.func1"),
		// The leaks-goroutine mutant's goroutine, on purpose: it ends
		// leakHold after its run, which may be among the last.
		goleak.IgnoreAnyFunction("github.com/vmcp-chaos/vmcp-chaos/scenarios_test.leaksGoroutine.Start.func1"))
	start := time.Now()
	stopSampling := sampleGate(start)
	code := m.Run()
	stopSampling()
	wall := time.Since(start)
	fmt.Printf("scenario slots: %d, held %s in %s (%.1f on average); waited %s in all on the CPU's pressure\n",
		testGate.Cap(), testGate.Held().Round(time.Second), wall.Round(time.Second), testGate.Held().Seconds()/wall.Seconds(), testGate.Throttled().Round(time.Second))
	if by := testGate.HeldBy(); len(by) > 0 {
		var top []string
		for _, st := range by[:min(len(by), 12)] {
			top = append(top, fmt.Sprintf("%s %s", st.Name, st.Held.Round(time.Second)))
		}
		fmt.Printf("slot time by scenario, the most first: %s\n", strings.Join(top, ", "))
	}
	writeGateLog(start)
	removeFixtureGW()
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
	if code == 0 {
		tb := &stderrTB{}
		leaks(tb)
		if tb.failed {
			code = 1
		}
	}
	os.Exit(code)
}

// GateLogEnv names a file that TestMain writes the gate's spans into
// (seconds since the tests started: entered, left, slots, scenario,
// target; one per line), after a line a second of what its throttle read
// ("# seconds running N loading N pressure P others P"), to see where the
// wall time went. The child process of TestContainerMutantTable writes
// none.
const GateLogEnv = "VMCP_CHAOS_GATE_LOG"

// gateSamples are sampleGate's lines.
var gateSamples struct {
	sync.Mutex
	lines []string
}

// sampleGate records, every second until stop, what the gate's throttle
// reads (GateLogEnv).
func sampleGate(start time.Time) (stop func()) {
	if os.Getenv(GateLogEnv) == "" || os.Getenv(mutantChildEnv) == "1" {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Second):
			}
			st := testGate.State()
			gateSamples.Lock()
			gateSamples.lines = append(gateSamples.lines, fmt.Sprintf("# %.1f running %d loading %d pressure %.0f others %.0f\n", time.Since(start).Seconds(), st.Running, st.Loading, st.Pressure, st.Others))
			gateSamples.Unlock()
		}
	})
	return func() { close(done); wg.Wait() }
}

func writeGateLog(start time.Time) {
	path := os.Getenv(GateLogEnv)
	if path == "" || os.Getenv(mutantChildEnv) == "1" {
		return
	}
	var b strings.Builder
	gateSamples.Lock()
	for _, l := range gateSamples.lines {
		b.WriteString(l)
	}
	gateSamples.Unlock()
	for _, s := range testGate.Spans() {
		fmt.Fprintf(&b, "%.2f %.2f %d %s %s\n", s.Entered.Sub(start).Seconds(), s.Left.Sub(start).Seconds(), s.Slots, s.Name, cmp.Or(s.Target, "-"))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		fmt.Fprintf(os.Stderr, "$%s: %v\n", GateLogEnv, err)
	}
}

// parallelTests is the default -test.parallel: every top-level test and
// parallel subtest may start at once; testGate, not the test count,
// bounds the scenarios they run.
const parallelTests = 64

// stderrTB is the runtimes.TB of TestMain's leak check: it prints.
type stderrTB struct{ failed bool }

func (*stderrTB) Helper() {}

func (tb *stderrTB) Errorf(format string, args ...any) {
	tb.failed = true
	fmt.Fprintf(os.Stderr, "after every test: "+format+"\n", args...)
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
