// Package scenarios is the acceptance suite: each scenario is written once,
// as a function of a started harness.Env and a gomega.Gomega, and run both
// by the Ginkgo suite (go test ./scenarios/...) and by `chaos run`. See
// README.md.
package scenarios

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
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
	LabelLoad      = runner.LabelLoad
	LabelProcess   = "process"
	LabelHealth    = "health"
	LabelRevisions = "revisions"
)

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
// order, each with its group's typical duration (typicalDurations).
func Catalogue() []Scenario {
	all := slices.Concat(wrappingScenarios(), hangScenarios(), sessionScenarios(), restartScenarios(), loadScenarios(),
		breakerScenarios(), keepaliveScenarios(), optimizerScenarios(), healthScenarios(), revisionsScenarios(), containerScenarios())
	for i := range all {
		all[i].Typical = typicalDurations[all[i].Group]
	}
	return all
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

// Narrow keeps the scenarios of selected that names name (each a full
// scenario name of all; several separated by commas), in their order: the
// AND of a `chaos run --scenario` with the --label filters that chose
// selected (`--label '!container' --scenario hang/legacy/sse` runs
// hang/legacy/sse only if the filter matches it). No name keeps every
// scenario; a name that is no scenario of all is an error naming it.
func Narrow(all, selected []Scenario, names ...string) ([]Scenario, error) {
	var want []string
	for _, n := range names {
		for _, p := range strings.Split(n, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			if !allNames(all, []string{p}) {
				return nil, fmt.Errorf("no scenario is named %q (chaos run --list names them)", p)
			}
			want = append(want, p)
		}
	}
	if len(want) == 0 {
		return selected, nil
	}
	return slices.DeleteFunc(slices.Clone(selected), func(s Scenario) bool { return !slices.Contains(want, s.Name) }), nil
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
