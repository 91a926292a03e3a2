// Package runner runs scenarios: one (Run: its topology, body, teardown,
// leak check and verdict) or many side by side (RunPool, RunLanes), and
// bounds how many run at once on this machine (Gate). It knows no scenario
// in particular: the catalogue (package scenarios) hands them over. See
// README.md.
package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
)

// The labels the runner schedules by (Scenario.Lane), given to scenarios
// by the catalogue.
const (
	// LabelLoad labels a scenario that measures latency under its own
	// load: it runs alone.
	LabelLoad = "load"
	// LabelContainer labels a scenario whose topology runs as containers:
	// it takes a host-wide container slot.
	LabelContainer = "container"
)

// Scenario is one acceptance scenario (one variant of it: a revision, a
// backend transport). The catalogue (package scenarios) builds them; Run
// runs one, knowing none in particular.
type Scenario struct {
	// Name is unique in the catalogue, e.g. "wrapping/legacy/sse".
	Name string
	// Group is the scenario without its variant, e.g. "wrapping".
	Group string
	// Description says what the scenario holds the gateway to.
	Description string
	// Labels are the catalogue labels plus the variant's.
	Labels []string
	// Needs are the capabilities the target must declare; a target that
	// lacks one makes the scenario skipped with that reason.
	Needs []targets.Capability
	// Conditional are the scenario's checks that need capabilities beyond
	// Needs: a target lacking them gets those checks recorded
	// not_applicable (kit.Kit.CheckIf), and the rest judged.
	Conditional []kit.ConditionalCheck
	// Timeout is the scenario's time budget: start and run, the harness's
	// own time (Budget). Time its failing calls wait for their end extends
	// it, up to MaxWall; teardown has a bound of its own.
	Timeout time.Duration
	// Typical is how long a run usually takes (the catalogue's figure for
	// its group), only to start the longest first (LongestFirst, Gate): a
	// wrong figure costs wall time, never a verdict; 0 (unknown) counts as
	// the longest.
	Typical time.Duration
	// Topology returns the backends and settings (the runner sets Target,
	// Recorder, Name and Labels).
	Topology func() harness.Topology
	// Run is the scenario body. It asserts with g; a failed assertion ends
	// it (the runner recovers) and fails the scenario.
	Run func(ctx context.Context, env *harness.Env, g gomega.Gomega)
}

// NotApplicable lists what of the scenario a target with caps cannot be
// judged on, and why: the whole scenario when it lacks a capability of
// Needs ("the whole scenario: target t lacks capability x"), else each
// conditional check it lacks a capability for ("name (lacks x)").
func (s Scenario) NotApplicable(target string, caps targets.Capabilities) []string {
	if missing := caps.Missing(s.Needs...); len(missing) > 0 {
		return []string{"the whole scenario: " + (&targets.MissingCapabilityError{Target: target, Missing: missing}).Error()}
	}
	var out []string
	for _, c := range s.Conditional {
		if missing := caps.Missing(c.Needs...); len(missing) > 0 {
			out = append(out, fmt.Sprintf("%s (lacks %s)", c.Name, missing))
		}
	}
	return out
}

// NotApplicableTo is NotApplicable for target t, adding the checks t has
// the capabilities for but cannot be judged on (ConditionalCheck.Unless):
// "name (why)".
func (s Scenario) NotApplicableTo(t targets.Target) []string {
	out := s.NotApplicable(t.Name(), t.Capabilities())
	if len(out) > 0 && strings.HasPrefix(out[0], "the whole scenario") {
		return out
	}
	for _, c := range s.Conditional {
		if c.Unless == nil || len(t.Capabilities().Missing(c.Needs...)) > 0 {
			continue
		}
		if why := c.Unless(t); why != "" {
			out = append(out, fmt.Sprintf("%s (%s)", c.Name, why))
		}
	}
	return out
}

// HasLabel reports whether the scenario carries label.
func (s Scenario) HasLabel(label string) bool { return slices.Contains(s.Labels, label) }

// FeatureNames is what the scenario renders into the target's config:
// the gateway features its topology asks for ("breaker, metrics"), or
// "-" for none.
func (s Scenario) FeatureNames() string {
	if s.Topology == nil {
		return "-"
	}
	if names := s.Topology().Features.Names(); len(names) > 0 {
		return strings.Join(names, ", ")
	}
	return "-"
}
