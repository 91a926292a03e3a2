package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"runtime"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// TestVersion: `chaos version` and `chaos --version` print the module
// version, the commit, the Go version and the results schema, the same
// text, with exit 0; an argument is a usage error.
func TestVersion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := regexp.MustCompile(fmt.Sprintf(`^version: \S+\ncommit: \S+\ngo: %s\nresults schema: %d\n(commit unknown: .*\n)?$`,
		regexp.QuoteMeta(runtime.Version()), history.SchemaVersion))
	var first string
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.CommandContext(ctx, chaosBin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("chaos %v: %v\n%s", args, err, out)
		}
		if !want.Match(out) {
			t.Errorf("chaos %v printed %q, want %s", args, out, want)
		}
		if first == "" {
			first = string(out)
		} else if string(out) != first {
			t.Errorf("chaos --version printed %q, chaos version %q", out, first)
		}
	}
	err := exec.CommandContext(ctx, chaosBin, "version", "extra").Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
		t.Errorf("chaos version extra: %v, want exit %d", err, exitUsage)
	}
}
