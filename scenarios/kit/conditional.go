package kit

import "github.com/vmcp-chaos/vmcp-chaos/harness/targets"

// ConditionalCheck is a check that needs capabilities (e.g. the metrics
// counters of the breaker scenario need metrics), declared by a scenario
// (its Conditional) and judged by its body.
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

// Judge judges the check with body (Kit.CheckIf) when the target can
// be judged on it, and records it not_applicable with the reason when it
// lacks a capability of Needs or Unless says why not.
func (c ConditionalCheck) Judge(k *Kit, body func(ck *C)) bool {
	if c.Unless != nil && k.Lacks(c.Needs...) == "" {
		if why := c.Unless(k.Env.Target()); why != "" {
			k.NotApplicable(c.Name, why)
			return false
		}
	}
	return k.CheckIf(c.Needs, c.Name, body)
}

// JudgePremise is Judge, but an applicable check is inconclusive, with
// why, when why is not "" (its premise does not hold).
func (c ConditionalCheck) JudgePremise(k *Kit, why string, body func(ck *C)) bool {
	if why != "" && k.Lacks(c.Needs...) == "" && (c.Unless == nil || c.Unless(k.Env.Target()) == "") {
		k.Inconclusive(c.Name, why)
		return false
	}
	return c.Judge(k, body)
}
