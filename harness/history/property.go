package history

import (
	"regexp"
	"slices"
)

// Property is what a check judges about the gateway, from a small closed
// catalogue (Properties) drawn from the mission. Findings group failed
// checks by property: "stalled calls are not bounded by the call timeout
// (46 checks, 9 scenarios)" instead of 46 lines.
type Property string

// The catalogue of properties: the mission's, with issue 41's three (an
// unhealthy backend's errors name it, the health API tells the truth,
// every advertised revision is served); the last two hold the checks that
// judge no fault: the gateway serving before any fault (the premise of
// the rest), and the scenario itself running to the end (topology start,
// teardown, no leaked goroutine).
const (
	PropNamesBackend Property = "names-failing-backend"
	// PropUnhealthyNamed: the gateway, having taken a backend out (its
	// health monitor, a dropped session), answers calls of its tools
	// itself; those errors must still name it.
	PropUnhealthyNamed Property = "unhealthy-backend-named"
	PropBounded        Property = "bounded-by-call-timeout"
	PropUnaffected     Property = "others-unaffected"
	PropRecovers       Property = "recovers-after-fault"
	PropSession        Property = "session-survives"
	PropBreaker        Property = "breaker"
	PropOptimizer      Property = "optimizer-excludes-unhealthy"
	PropForged         Property = "forged-answers-rejected"
	PropCancel         Property = "cancellation-forwarded"
	PropKeepalive      Property = "keepalive-state"
	PropHealth         Property = "health-reports"
	// PropHealthTruth: the health API's state of a backend agrees with
	// the backend's real state (sampled during faults): never healthy
	// for a backend dead past the health interval and recovery window.
	PropHealthTruth Property = "health-api-truthful"
	// PropRevisions: a client of every protocol revision the gateway
	// advertises (server/discover's supportedVersions, or the revision
	// initialize agrees) initializes and calls a tool.
	PropRevisions Property = "advertised-revisions-served"
	PropMetrics   Property = "metrics"
	PropBaseline  Property = "serves-before-fault"
	PropRuns      Property = "scenario-runs"
	// PropOther is no property of the catalogue: findings group under it
	// the checks of results written before checks declared one, whose
	// names no rule knows. It is not in Properties.
	PropOther Property = "other"
)

// Properties is the closed catalogue, in the order findings list them.
var Properties = []Property{PropNamesBackend, PropUnhealthyNamed, PropBounded, PropUnaffected, PropRecovers, PropSession, PropBreaker,
	PropOptimizer, PropForged, PropCancel, PropKeepalive, PropHealth, PropHealthTruth, PropRevisions, PropMetrics, PropBaseline, PropRuns}

var propertyText = map[Property]string{
	PropNamesBackend:   "the error names the failing backend",
	PropUnhealthyNamed: "an unhealthy backend's errors still name it",
	PropBounded:        "the call is bounded by the call timeout",
	PropUnaffected:     "other backends are unaffected",
	PropRecovers:       "the backend recovers after the fault",
	PropSession:        "the session survives",
	PropBreaker:        "the breaker opens, fails fast, and recovers",
	PropOptimizer:      "the optimizer excludes unhealthy backends",
	PropForged:         "forged answers are rejected",
	PropCancel:         "cancellation is forwarded",
	PropKeepalive:      "keepalive state",
	PropHealth:         "health reports",
	PropHealthTruth:    "the health API tells the truth",
	PropRevisions:      "every protocol revision the gateway advertises is served",
	PropMetrics:        "metrics",
	PropBaseline:       "every backend answers before any fault",
	PropRuns:           "the scenario runs to the end",
	PropOther:          "checks of no catalogued property",
}

// Text is the property in words ("the call is bounded by the call
// timeout"); an unknown property is its own text.
func (p Property) Text() string {
	if t, ok := propertyText[p]; ok {
		return t
	}
	return string(p)
}

// Known reports whether p is in the catalogue.
func (p Property) Known() bool { return slices.Contains(Properties, p) }

// propertyRules declare the property of every check of the catalogue by
// its name, in ONE place: the first rule whose pattern matches wins. The
// kit declares the property itself where it knows it (CheckRecovery,
// "the session recovers from ..."); TestEveryCheckHasAProperty runs the
// catalogue and fails on a check no rule matches.
var propertyRules = []struct {
	re   *regexp.Regexp
	prop Property
}{
	{regexp.MustCompile(`^health API: beta is (not )?reported serving`), PropHealthTruth},
	{regexp.MustCompile(`^the advertised revision `), PropRevisions},
	{regexp.MustCompile(`^health API:|lastError|clears beta's error|connected at the (start|end)|backend state is stuck`), PropHealth},
	{regexp.MustCompile(`^metrics:`), PropMetrics},
	{regexp.MustCompile(`^topology starts$|^teardown |^no goroutine leaked|^scenario ran to the end`), PropRuns},
	{regexp.MustCompile(`forged answer|wrong-id answer`), PropForged},
	{regexp.MustCompile(`names? (alpha|beta|gamma|the tool)|naming|failures name|isError passes through`), PropNamesBackend},
	{regexp.MustCompile(`^case \d|find_tool|call_tool`), PropOptimizer},
	{regexp.MustCompile(`unaffected|alpha answers (while|within|during)|alpha never fails|does not block`), PropUnaffected},
	{regexp.MustCompile(`^(all back|expire|restart|restart_again):|answers (once|again|after|at the end)|crashed and recovered|after the last recovery|after the stall cleared|full service`), PropRecovers},
	{regexp.MustCompile(`cancel|the slow call reaches beta`), PropCancel},
	{regexp.MustCompile(`keepalive|pinged|probe`), PropKeepalive},
	{regexp.MustCompile(`circuit|while open|trial call`), PropBreaker},
	{regexp.MustCompile(`before (any fault|the )|answers at the start`), PropBaseline},
	{regexp.MustCompile(`session survives|lists both backends|new session works|session gets a clean error|session recovers from`), PropSession},
	{regexp.MustCompile(`fails within|fail fast|returns within|ends within|no call hangs|no call takes longer|every call ends|fails$`), PropBounded},
}

// PropertyOf is the property the check named name judges, by the
// catalogue's rules; "" when no rule declares one.
func PropertyOf(name string) Property {
	for _, r := range propertyRules {
		if r.re.MatchString(name) {
			return r.prop
		}
	}
	return ""
}
