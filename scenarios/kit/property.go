package kit

import (
	"cmp"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// stamp sets what a check was judged under: the property the kit
// declares for it (k.property, set by CheckRecovery and Steady; else the
// catalogue's, by name: history.PropertyOf), the fault step Steady
// last began, and the protocol version the gateway agreed on its
// evidence (else the scenario's revision, by label).
func (k *Kit) stamp(ch *history.Check, evidence ...history.CallRecord) {
	ch.Property = cmp.Or(ch.Property, k.property, history.PropertyOf(ch.Name))
	if k.lastStep != "the start" {
		ch.Fault = k.lastStep
	}
	for _, c := range evidence {
		if c.Protocol != "" {
			ch.Revision = c.Protocol
			break
		}
	}
}

// declare makes the checks recorded until restore is called judge p
// (e.g. CheckRecovery: "the backend recovers after the fault").
func (k *Kit) declare(p history.Property) (restore func()) {
	prev := k.property
	k.property = p
	return func() { k.property = prev }
}

// propertyShown is the property a failed check is counted under: a
// check of what the gateway answered (that it names the backend) whose
// every evidence call ended by the client's own deadline judged no
// answer at all: the gateway never answered, so the failure is that the
// call was not bounded by the call timeout. Any other failure keeps p.
//
// A failed check whose evidence includes a success that carried another
// request's answer (CallRecord.ForeignAnswer: another id on the wire;
// CallRecord.Forged: the backend's forged answer returned as the call's)
// is filed under "forged answers are rejected", wherever it was observed:
// that is the defect the evidence shows.
func propertyShown(p history.Property, evidence []history.CallRecord) history.Property {
	for _, c := range evidence {
		if c.ForeignAnswer || c.Forged {
			return history.PropForged
		}
	}
	if p != history.PropNamesBackend || len(evidence) == 0 {
		return p
	}
	for _, c := range evidence {
		if c.Outcome != history.OutcomeTimeout {
			return p
		}
	}
	return history.PropBounded
}

// answeredItself reports whether every failed call of evidence addressed
// a backend's tool, never reached that backend (its log shows no such
// request) and was refused with a JSON-RPC error (not a tool result
// reporting a failure): the gateway had taken the backend out of its
// table and refused the call itself. A naming check failed on such calls
// judges "an unhealthy backend's errors still name it". (A transport
// error the gateway reports without a request reaching the backend, a
// connection it found closed, is no such removal.)
func (k *Kit) answeredItself(evidence []history.CallRecord) bool {
	if !grounded(k.Ctx) {
		return false
	}
	n := 0
	for _, c := range evidence {
		if c.Outcome == history.OutcomeOK || c.Method != "tools/call" {
			continue
		}
		if c.RPCCode == nil {
			return false
		}
		backend := k.backendOf(c.Target)
		if backend == "" {
			return false
		}
		if _, ok, err := k.Arrival(backend, &history.Call{CallRecord: c}); err != nil || ok {
			return false
		}
		n++
	}
	return n > 0
}

// backendOf is the backend whose fixture tool (echo, slow: Fixture) the
// gateway exposes as name ("" when none is).
func (k *Kit) backendOf(name string) string {
	for _, b := range k.Env.Backends() {
		for _, t := range []string{"echo", "slow"} {
			if k.Tool(b.Name(), t) == name {
				return b.Name()
			}
		}
	}
	return ""
}
