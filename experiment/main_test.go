package experiment_test

import (
	"os"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/internal/testpar"
)

// parallelTests is the package's default -test.parallel: its tests wait on the experiments' phases far more than they compute, so more of
// them than the machine's cores overlap (see internal/testpar).
const parallelTests = 8

func TestMain(m *testing.M) {
	testpar.Default(parallelTests)
	os.Exit(m.Run())
}
