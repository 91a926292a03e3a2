// Package scenarios is the acceptance suite: each scenario is written once,
// as a function of a started harness.Env and a gomega.Gomega, and run both
// by the Ginkgo suite (go test ./scenarios/...) and by `chaos run`. See
// README.md.
package scenarios

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
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
	Needs []harness.Capability
	// Timeout bounds the whole scenario: start, run and teardown.
	Timeout time.Duration
	// Topology returns the backends and settings (the runner sets Target,
	// Recorder, Name and Labels).
	Topology func() harness.Topology
	// Run is the scenario body. It asserts with g; a failed assertion ends
	// it (the runner recovers) and fails the scenario.
	Run func(ctx context.Context, env *harness.Env, g gomega.Gomega)
}

// HasLabel reports whether the scenario carries label.
func (s Scenario) HasLabel(label string) bool { return slices.Contains(s.Labels, label) }

// Variant is a client revision and the transport of the backend that
// faults are injected into.
type Variant struct {
	Revision  harness.Revision
	Transport fakebackends.Transport
}

// Name is "legacy/sse" and the like.
func (v Variant) Name() string { return string(v.Revision) + "/" + string(v.Transport) }

// Labels are the revision and transport labels.
func (v Variant) Labels() []string { return []string{string(v.Revision), string(v.Transport)} }

// AllVariants is every revision on every HTTP transport.
var AllVariants = []Variant{
	{harness.RevisionLegacy, fakebackends.TransportStreamableHTTP},
	{harness.RevisionLegacy, fakebackends.TransportSSE},
	{harness.RevisionModern, fakebackends.TransportStreamableHTTP},
	{harness.RevisionModern, fakebackends.TransportSSE},
}

// Catalogue returns every scenario, every variant expanded, in a stable
// order.
func Catalogue() []Scenario {
	var out []Scenario
	out = append(out, wrappingScenarios()...)
	out = append(out, hangScenarios()...)
	out = append(out, sessionScenarios()...)
	out = append(out, restartScenarios()...)
	out = append(out, loadScenarios()...)
	out = append(out, breakerScenarios()...)
	out = append(out, keepaliveScenarios()...)
	out = append(out, optimizerScenarios()...)
	out = append(out, containerScenarios()...)
	return out
}

// Filter returns the scenarios that carry at least one of labels (all of
// them when labels is empty), keeping the order.
func Filter(all []Scenario, labels ...string) []Scenario {
	if len(labels) == 0 {
		return all
	}
	var out []Scenario
	for _, s := range all {
		for _, l := range labels {
			if s.HasLabel(l) || s.Group == l || s.Name == l {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// Labels returns every label in the catalogue, sorted.
func Labels() []string {
	seen := map[string]bool{}
	for _, s := range Catalogue() {
		for _, l := range s.Labels {
			seen[l] = true
		}
	}
	out := make([]string, 0, len(seen))
	for l := range seen {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// variants expands one scenario definition over variants.
func variants(group string, vs []Variant, mk func(v Variant) Scenario) []Scenario {
	out := make([]Scenario, 0, len(vs))
	for _, v := range vs {
		s := mk(v)
		s.Group = group
		s.Name = group + "/" + v.Name()
		s.Labels = append(append([]string(nil), s.Labels...), v.Labels()...)
		out = append(out, s)
	}
	return out
}
