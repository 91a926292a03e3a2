package main

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestBenchFlags: bad sizes of the error, stall and scale figures are
// usage errors (exit 2) naming the flag, before anything starts.
func TestBenchFlags(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--steps", "calls,nope"}, `--steps "nope"`},
		{[]string{"--error-calls", "0"}, "--error-calls 0"},
		{[]string{"--stall-timeout", "0s"}, "--stall-timeout 0s"},
		{[]string{"--stall-timeout", "2s", "--stall-deadline", "2s"}, "--stall-deadline 2s"},
		{[]string{"--stall-calls", "0"}, "--stall-calls 0"},
		{[]string{"--scale-sessions", "100,0"}, "--scale-sessions 0"},
		{[]string{"--scale-sessions", "x"}, "--scale-sessions"},
		{[]string{"--scale-duration", "-1s"}, "--scale-duration -1s"},
		{[]string{"--scale-rate", "0"}, "--scale-rate 0"},
		{[]string{"--crash-every", "1ms"}, "--crash-every 1ms"},
	} {
		out, err := exec.CommandContext(ctx, chaosBin, append([]string{"bench"}, tc.args...)...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("bench %v: err %v (want exit status 2), output %s", tc.args, err, out)
		}
	}
}
