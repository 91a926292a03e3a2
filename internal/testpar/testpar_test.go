package testpar_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/internal/testpar"
)

// reportEnv=1 makes the test binary a helper: it calls Default(5) and
// prints the -test.parallel its tests would run with.
const reportEnv = "TESTPAR_TEST_REPORT"

func TestMain(m *testing.M) {
	if os.Getenv(reportEnv) == "1" {
		testpar.Default(5)
		fmt.Printf("parallel=%s\n", flag.Lookup("test.parallel").Value)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestDefault: Default sets -test.parallel when the command line does not,
// and leaves the command line's value (any spelling) alone.
func TestDefault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "5"},
		{[]string{"-test.parallel=3"}, "3"},
		{[]string{"-test.parallel", "2"}, "2"},
		{[]string{"--test.parallel=5"}, "5"},
		{[]string{"-test.count=1", "-test.parallel=7"}, "7"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0], tc.args...)
		cmd.Env = append(os.Environ(), reportEnv+"=1")
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != "parallel="+tc.want {
			t.Errorf("%v: %q, want parallel=%s", tc.args, got, tc.want)
		}
	}
}
