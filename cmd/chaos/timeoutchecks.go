package main

import (
	"slices"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
)

// countTimeoutChecks counts the checks that a gateway enforcing no call
// timeout fails in the run of selected against target:
// scenarios.CallTimeoutChecks of each scenario the run judges (not one it
// skips as a whole: a capability the target lacks, a backend transport it
// does not take, a container scenario it has no gateway image for), but
// those not applicable to the target (a conditional check it lacks a
// capability for, a check on a method family its profile leaves out).
func countTimeoutChecks(selected []scenarios.Scenario, target targets.Target) harness.TimeoutChecks {
	var n harness.TimeoutChecks
	for _, s := range selected {
		if na := notApplicableInList(s, target); len(na) > 0 && strings.HasPrefix(na[0], "the whole scenario") {
			continue
		}
		if s.HasLabel(scenarios.LabelContainer) {
			if _, err := containers.GatewayFor(target); err != nil {
				continue // skipped: the target cannot run in a container
			}
		}
		if !scenarios.CallTimeoutPinned(s) {
			n.Unpinned++
			continue
		}
		counted := false
		for _, c := range scenarios.CallTimeoutChecks(s) {
			if !judgedOn(s, c, target) {
				continue
			}
			counted = true
			switch history.PropertyOf(c) {
			case history.PropBounded:
				n.Bounded++
			case history.PropNamesBackend:
				n.Named++
			default:
				n.Other++
			}
		}
		if counted {
			n.Scenarios++
		}
	}
	return n
}

// judgedOn reports whether the check named check of s is judged on target:
// not a conditional check it lacks a capability for (or that says why
// not), not a check on a method family its profile leaves out.
func judgedOn(s scenarios.Scenario, check string, target targets.Target) bool {
	if i := slices.IndexFunc(s.Conditional, func(c scenarios.ConditionalCheck) bool { return c.Name == check }); i >= 0 {
		c := s.Conditional[i]
		if len(target.Capabilities().Missing(c.Needs...)) > 0 || (c.Unless != nil && c.Unless(target) != "") {
			return false
		}
	}
	for _, family := range targets.MethodFamilies {
		if strings.Contains(check, " "+family+"/") && targets.MethodsOf(target).Lacks(family+"/") != "" {
			return false
		}
	}
	return true
}
