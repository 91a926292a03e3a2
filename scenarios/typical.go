package scenarios

import "time"

// typicalDurations are the scenario groups' usual durations against the
// reference gateway on a 2-core machine (chaos run's results.json), given
// to each scenario as its Typical (Catalogue) only to start the longest
// first: a wrong or missing figure costs wall time, never a verdict.
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
	"health":                    time.Second,
	"revisions":                 200 * time.Millisecond,
	"session":                   time.Second,
	"hang-kill":                 time.Second,
	"hang-cancel":               200 * time.Millisecond,
	"restart":                   100 * time.Millisecond,
}
