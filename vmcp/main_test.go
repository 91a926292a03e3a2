package vmcp_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/vmcp-chaos/vmcp-chaos/internal/testpar"
)

// stdioBackendBin is the path of the stdio fake backend built for the tests.
var stdioBackendBin string

// parallelTests is the package's default -test.parallel. Its tests wait
// far more than they compute, but many are timed by 1-2 s call and
// initialize timeouts: with 4 or 8 at once, two copies of the package under
// -race at load average 9-25 starved in-process backends past them
// (TestPoolPickDuringReinitialization, TestFaultMatrix's oversized answer).
// 2 at once passed three such pairs (load average 3); -parallel N on the
// command line overrides it (8 took 41.9 s without -race on a quiet machine).
const parallelTests = 2

// TestMain builds the stdio fake backend, runs the tests (side by side, up
// to parallelTests at once unless -parallel says) and fails the package if
// a goroutine outlived them: a process-wide check, so it runs here, after
// every test, not in a test beside others.
func TestMain(m *testing.M) {
	testpar.Default(parallelTests)
	dir, err := os.MkdirTemp("", "vmcp-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stdioBackendBin = filepath.Join(dir, "stdiobackend")
	build := exec.Command("go", "build", "-o", stdioBackendBin, "./testdata/stdiobackend")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build stdio backend:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
