package kit

import (
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// Applicability is decided here, for every check, from its evidence: a
// check that failed (or whose premise did not hold) on a call of a method
// the gateway does not offer is not_applicable, with the reason, wherever
// the scenario made the call. A method is not offered when the target's
// profile leaves its family out (methods), when the session's initialize
// did not advertise it, or when the gateway answered it -32601
// (history.CallRecord.NotOffered). No scenario needs to ask first;
// NotOffered lets one skip a step it knows is pointless.

// NotOffered returns why the gateway does not offer method to c ("" when
// it does): it did not advertise the method's capability (tools,
// resources, prompts) at initialize, or the target's profile leaves it
// out (methods).
func (k *Kit) NotOffered(c *history.Client, method string) string {
	if why := targets.MethodsOf(k.Env.Target()).Lacks(method); why != "" {
		return why
	}
	if !c.Offers(method) {
		return "the gateway does not advertise " + family(method) + " at initialize"
	}
	return ""
}

// notOfferedCall returns why the gateway does not offer the method of a
// recorded call ("" when it does).
func (k *Kit) notOfferedCall(c history.CallRecord) string {
	if why := targets.MethodsOf(k.Env.Target()).Lacks(c.Method); why != "" {
		return why
	}
	return c.NotOffered
}

// notApplicable returns why a check whose body failed, or whose premise
// did not hold, with evidence, is not applicable: one of its calls is of
// a method the gateway does not offer, and none of the calls of methods
// it offers failed (so nothing the gateway offers is what went wrong).
// "" when the check stands.
func (k *Kit) notApplicable(evidence []history.CallRecord) string {
	why := ""
	for _, c := range evidence {
		if w := k.notOfferedCall(c); w != "" {
			if why == "" {
				why = w + " (" + c.Method + " " + c.Target + ")"
			}
		} else if c.Outcome != history.OutcomeOK {
			return ""
		}
	}
	return why
}

// family is "resources" of "resources/read".
func family(method string) string {
	for i := range method {
		if method[i] == '/' {
			return method[:i]
		}
	}
	return method
}
