package scenarios

import (
	"cmp"
	"slices"
	"time"
)

// typicalDurations are the scenario groups' usual durations against the
// reference gateway on a 2-core machine (chaos run's results.json), only
// to start the longest first (longestFirst): a wrong or missing figure
// costs wall time, never a verdict.
var typicalDurations = map[string]time.Duration{
	"container-kill":            30 * time.Second,
	"container-partition":       20 * time.Second,
	"container-freeze":          15 * time.Second,
	"container-gateway-restart": 10 * time.Second,
	"wrapping":                  4 * time.Second,
	"hang-pause":                4 * time.Second,
	"keepalive":                 4 * time.Second,
	"optimizer":                 3 * time.Second,
	"load":                      3 * time.Second,
	"hang":                      2500 * time.Millisecond,
	"breaker":                   time.Second,
	"session":                   time.Second,
	"hang-kill":                 time.Second,
	"hang-cancel":               200 * time.Millisecond,
	"restart":                   100 * time.Millisecond,
}

// typicalDuration is sc's group's typical duration (typicalDurations);
// a group without one counts as the longest, so a new scenario is never
// the one left to start last.
func typicalDuration(sc Scenario) time.Duration {
	if d, ok := typicalDurations[sc.Group]; ok {
		return d
	}
	return time.Hour
}

// longestFirst returns idx (indices into scs) ordered by their
// scenarios' typical durations, longest first, keeping scs's order
// among equals (longest processing time first: the slots end together).
func longestFirst(scs []Scenario, idx []int) []int {
	out := slices.Clone(idx)
	slices.SortStableFunc(out, func(a, b int) int { return cmp.Compare(typicalDuration(scs[b]), typicalDuration(scs[a])) })
	return out
}
