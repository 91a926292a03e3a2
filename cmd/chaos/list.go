package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
)

// methodChecks are the scenario groups with checks on resources or
// prompts (scenarios/wrapping.go and restart.go call both, breaker.go
// reads a resource): a target whose profile's methods leave a family out
// gets those checks not applicable.
var methodChecks = map[string][]string{
	scenarios.LabelWrapping: {"resources", "prompts"},
	scenarios.LabelRestart:  {"resources", "prompts"},
	scenarios.LabelBreaker:  {"resources"},
}

// printList is `chaos run --list`: each selected scenario with its labels,
// the capabilities it needs, the features it renders into the gateway's
// config, and what of it the target cannot be judged on: all of it when
// it lacks a capability or does not take a backend transport the
// scenario uses (profile backendTransports), else its checks on a method
// family the profile's methods leave out and its conditional checks.
func printList(w io.Writer, selected []scenarios.Scenario, target targets.Target) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tLABELS\tNEEDS\tCONFIG FEATURES\tNOT APPLICABLE TO "+target.Name())
	for _, s := range selected {
		na := notApplicableInList(s, target)
		if len(na) == 0 {
			na = []string{"-"}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, strings.Join(s.Labels, ","), targets.Capabilities(s.Needs), s.FeatureNames(), strings.Join(na, "; "))
	}
	return tw.Flush()
}

// notApplicableInList is what of s the run will not judge on target (see
// printList), by the rules the run applies.
func notApplicableInList(s scenarios.Scenario, target targets.Target) []string {
	out := s.NotApplicableTo(target)
	if len(out) > 0 && strings.HasPrefix(out[0], "the whole scenario") {
		return out
	}
	if s.Topology != nil {
		for _, b := range s.Topology().Backends {
			if b.Script == nil {
				continue
			}
			if why := targets.TransportsOf(target).Lacks(string(b.Script.Transport)); why != "" {
				return []string{"the whole scenario: " + why}
			}
		}
	}
	for _, family := range methodChecks[s.Group] {
		if why := targets.MethodsOf(target).Lacks(family + "/"); why != "" {
			out = append(out, fmt.Sprintf("checks on %s (%s)", family, why))
		}
	}
	return out
}
