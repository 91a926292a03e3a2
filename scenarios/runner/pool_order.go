package runner

import (
	"cmp"
	"slices"
	"time"
)

// typicalDuration is sc's typical duration (Scenario.Typical); one
// without counts as the longest, so a new scenario is never the one left
// to start last.
func typicalDuration(sc Scenario) time.Duration {
	if sc.Typical > 0 {
		return sc.Typical
	}
	return time.Hour
}

// LongestFirst returns idx (indices into scs) ordered by their
// scenarios' typical durations, longest first, keeping scs's order
// among equals (longest processing time first: the slots end together).
func LongestFirst(scs []Scenario, idx []int) []int {
	out := slices.Clone(idx)
	slices.SortStableFunc(out, func(a, b int) int { return cmp.Compare(typicalDuration(scs[b]), typicalDuration(scs[a])) })
	return out
}
