// Package scenarios is the acceptance suite: each scenario is written once,
// as a function of a started harness.Env and a gomega.Gomega, and run both
// by the Ginkgo suite (go test ./scenarios/...) and by `chaos run`. See
// README.md.
package scenarios

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
)

// Labels of the catalogue. A scenario also carries the labels of its
// variant: the client revision (legacy, modern) and the faulty backend's
// transport (streamable-http, sse).
const (
	LabelWrapping  = "wrapping"
	LabelHang      = "hang"
	LabelBreaker   = "breaker"
	LabelOptimizer = "optimizer"
	LabelSession   = "session"
	LabelKeepalive = "keepalive"
	LabelRestart   = "restart"
	LabelLoad      = "load"
	LabelProcess   = "process"
)

// Scenario is one acceptance scenario (one variant of it: a revision, a
// backend transport).
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
	Conditional []ConditionalCheck
	// Timeout is the scenario's time budget: start and run, the harness's
	// own time (Budget). Time its failing calls wait for their end extends
	// it, up to MaxWall; teardown has a bound of its own.
	Timeout time.Duration
	// Topology returns the backends and settings (the runner sets Target,
	// Recorder, Name and Labels).
	Topology func() harness.Topology
	// Run is the scenario body. It asserts with g; a failed assertion ends
	// it (the runner recovers) and fails the scenario.
	Run func(ctx context.Context, env *harness.Env, g gomega.Gomega)
}

// ConditionalCheck is a check that needs capabilities (e.g. the metrics
// counters of the breaker scenario need metrics).
type ConditionalCheck struct {
	// Name is the check's name, as recorded.
	Name string
	// Needs are the capabilities it needs.
	Needs []targets.Capability
	// Unless, when set, says why a target that has Needs still cannot be
	// judged on the check ("" when it can): e.g. a health API that reports
	// no keepalive state. The scenario records it not_applicable then.
	Unless func(t targets.Target) string
}

// judge judges the check with body (kit.Kit.CheckIf) when the target can
// be judged on it, and records it not_applicable with the reason when it
// lacks a capability of Needs or Unless says why not.
func (c ConditionalCheck) judge(k *kit.Kit, body func(ck *kit.C)) bool {
	if c.Unless != nil && k.Lacks(c.Needs...) == "" {
		if why := c.Unless(k.Env.Target()); why != "" {
			k.NotApplicable(c.Name, why)
			return false
		}
	}
	return k.CheckIf(c.Needs, c.Name, body)
}

// judgePremise is judge, but an applicable check is inconclusive, with
// why, when why is not "" (its premise does not hold).
func (c ConditionalCheck) judgePremise(k *kit.Kit, why string, body func(ck *kit.C)) bool {
	if why != "" && k.Lacks(c.Needs...) == "" && (c.Unless == nil || c.Unless(k.Env.Target()) == "") {
		k.Inconclusive(c.Name, why)
		return false
	}
	return c.judge(k, body)
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

// Variant is a client revision and the transport of the backend that
// faults are injected into.
type Variant struct {
	Revision  history.Revision
	Transport fakebackends.Transport
}

// Name is "legacy/sse" and the like.
func (v Variant) Name() string { return string(v.Revision) + "/" + string(v.Transport) }

// Labels are the revision and transport labels.
func (v Variant) Labels() []string { return []string{string(v.Revision), string(v.Transport)} }

// AllVariants is every revision on every HTTP transport.
var AllVariants = []Variant{
	{history.RevisionLegacy, fakebackends.TransportStreamableHTTP},
	{history.RevisionLegacy, fakebackends.TransportSSE},
	{history.RevisionModern, fakebackends.TransportStreamableHTTP},
	{history.RevisionModern, fakebackends.TransportSSE},
}

// Catalogue returns every scenario, every variant expanded, in a stable
// order.
func Catalogue() []Scenario {
	return slices.Concat(wrappingScenarios(), hangScenarios(), sessionScenarios(), restartScenarios(), loadScenarios(),
		breakerScenarios(), keepaliveScenarios(), optimizerScenarios(), containerScenarios())
}

// Select returns the scenarios matched by any of filters (all of them
// when there is none), keeping the order. A filter is a full scenario
// name ("hang/legacy/sse"; several separated by commas) or a Ginkgo label filter, the syntax of
// `go test ./scenarios/... -ginkgo.label-filter=...`: labels (a scenario's
// labels include its group), &&, ||, !, parentheses, a comma for ||, and
// /regexp/ (e.g. "hang && !process", "wrapping || breaker"). A filter
// that does not parse is an error naming it.
func Select(all []Scenario, filters ...string) ([]Scenario, error) {
	var names []string
	var matchers []func([]string) bool
	for _, f := range filters {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if parts := strings.Split(f, ","); allNames(all, parts) {
			for _, p := range parts {
				names = append(names, strings.TrimSpace(p))
			}
			continue
		}
		m, err := types.ParseLabelFilter(f)
		if err != nil {
			return nil, fmt.Errorf("label filter %q: %s", f, plainError(err))
		}
		matchers = append(matchers, m)
	}
	if len(names) == 0 && len(matchers) == 0 {
		return all, nil
	}
	var out []Scenario
	for _, s := range all {
		if slices.Contains(names, s.Name) || slices.ContainsFunc(matchers, func(m func([]string) bool) bool { return m(s.Labels) }) {
			out = append(out, s)
		}
	}
	return out, nil
}

var ansiRE = regexp.MustCompile(`\x1b\[[0-9;]*m|\{\{/?[a-z-]*\}\}`)

// plainError is a Ginkgo error's heading and message on one line, without
// terminal colours.
func plainError(err error) string {
	text := err.Error()
	var ge types.GinkgoError
	if errors.As(err, &ge) {
		text = ge.Heading + ": " + ge.Message
	}
	return strings.Join(strings.Fields(ansiRE.ReplaceAllString(text, "")), " ")
}

// allNames reports whether every one of parts is a scenario's name.
func allNames(all []Scenario, parts []string) bool {
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if !slices.ContainsFunc(all, func(s Scenario) bool { return s.Name == p }) {
			return false
		}
	}
	return true
}

// Labels returns every label in the catalogue, sorted.
func Labels() []string {
	seen := map[string]bool{}
	for _, s := range Catalogue() {
		for _, l := range s.Labels {
			seen[l] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// variants expands one scenario definition over variants.
func variants(group string, vs []Variant, mk func(v Variant) Scenario) []Scenario {
	out := make([]Scenario, 0, len(vs))
	for _, v := range vs {
		s := mk(v)
		s.Group = group
		s.Name = group + "/" + v.Name()
		s.Labels = append(append([]string(nil), s.Labels...), v.Labels()...)
		if !slices.Contains(s.Labels, group) {
			s.Labels = append([]string{group}, s.Labels...)
		}
		out = append(out, s)
	}
	return out
}
