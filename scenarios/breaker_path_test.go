package scenarios

import (
	"slices"
	"testing"
)

// TestBreakerPathExcusesFailedTrials: the poller's path may reopen the
// circuit once per failed half-open trial beta's log shows, never more.
func TestBreakerPathExcusesFailedTrials(t *testing.T) {
	want := []string{"closed", "open", "half-open", "closed"}
	for _, tc := range []struct {
		path   []string
		trials int
		ok     bool
	}{
		{[]string{"closed", "open", "half-open", "closed"}, 0, true},
		{[]string{"closed", "open", "closed"}, 0, true}, // the poller missed half-open
		{[]string{"closed", "open", "half-open", "open", "half-open", "closed"}, 1, true},
		{[]string{"closed", "open", "half-open", "open", "half-open", "closed"}, 0, false},
		{[]string{"closed", "open", "half-open", "open", "half-open", "open", "half-open", "closed"}, 1, false},
		{[]string{"closed", "open", "half-open", "closed", "open"}, 3, false},
	} {
		rest, _ := withoutReopens(tc.path, tc.trials)
		if got := isSubsequence(rest, want); got != tc.ok {
			t.Errorf("path %v with %d failed trials: accepted %v, want %v (rest %v)", tc.path, tc.trials, got, tc.ok, rest)
		}
	}
	if rest, n := withoutReopens([]string{"open", "half-open", "open"}, 5); n != 1 || !slices.Equal(rest, []string{"open"}) {
		t.Errorf("withoutReopens dropped %d, left %v", n, rest)
	}
}
