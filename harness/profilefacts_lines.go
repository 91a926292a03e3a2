package harness

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// FactLine is one measured fact in words, the profile line it implies and
// what it will do to a run.
type FactLine struct {
	// Fact names it: tool names, methods, backend transports, revisions,
	// call timeout, recovery, capabilities.
	Fact string
	// Seen is what was measured.
	Seen string
	// Key and Value are the profile field the fact sets and its YAML
	// value ("" Key: no field; "" Value with a Key: leave the field out).
	Key, Value string
	// Effect is what the fact does to `chaos run`.
	Effect string
}

// Line is the profile line ("-" when the fact implies none).
func (l FactLine) Line() string {
	switch {
	case l.Key == "":
		return "-"
	case l.Value == "":
		return "(no " + l.Key + ")"
	}
	return l.Key + ": " + l.Value
}

// Lines turns the facts into lines, each with the profile line it implies
// and its effect on a run.
func (f Facts) Lines() []FactLine {
	var out []FactLine
	if f.ToolNames != "" {
		out = append(out, FactLine{Fact: "tool names", Seen: f.NamedBy, Key: "toolNames", Value: quoteYAML(f.ToolNames),
			Effect: "tools are found by origin marker; the pattern names them where the gateway drops it"})
	} else {
		out = append(out, FactLine{Fact: "tool names", Seen: f.NamedBy, Effect: "readiness and every check need the backends' tools listed: the run cannot start"})
	}

	served := slices.DeleteFunc(slices.Clone(targets.MethodFamilies), func(m string) bool { return !slices.Contains(f.Served, m) })
	methods := FactLine{Fact: "methods", Seen: fmt.Sprintf("advertised at initialize: %s; answered: %s", orNone(f.Offered), orNone(served)), Key: "methods"}
	if len(served) < len(targets.MethodFamilies) {
		methods.Value = "[" + strings.Join(served, ", ") + "]"
		methods.Effect = "the checks on " + strings.Join(slices.DeleteFunc(slices.Clone(targets.MethodFamilies), func(m string) bool { return slices.Contains(served, m) }), " and ") + " are not applicable"
	} else {
		methods.Effect = "every method family is judged"
	}
	out = append(out, methods)

	var took, refused []string
	for _, tr := range targets.TransportNames {
		why, ok := f.Transports[tr]
		switch {
		case !ok:
		case why == "":
			took = append(took, tr)
		default:
			refused = append(refused, tr+" ("+clip(why, 120)+")")
		}
	}
	tr := FactLine{Fact: "backend transports", Seen: "takes " + orNone(took), Key: "backendTransports"}
	if len(refused) > 0 {
		tr.Seen += "; not " + strings.Join(refused, "; ")
		tr.Value = "[" + strings.Join(took, ", ") + "]"
		tr.Effect = "the scenario variants with a backend on another transport are not applicable (skipped)"
	} else {
		tr.Effect = "every variant runs"
	}
	out = append(out, tr)

	var revs []string
	older := false
	for _, rev := range history.Revisions {
		agreed := f.Revisions[rev]
		asked := map[history.Revision]string{history.RevisionLegacy: "2025-11-25", history.RevisionModern: "2026-07-28"}[rev]
		revs = append(revs, fmt.Sprintf("a %s client gets %s", asked, cmp.Or(agreed, "?")))
		older = older || (agreed != "" && agreed != asked)
	}
	rv := FactLine{Fact: "protocol revisions", Seen: strings.Join(revs, "; "), Effect: "each variant runs on the revision it asks for"}
	if older {
		rv.Effect = "the variants of a revision the gateway does not agree run on the revision it agrees: their checks judge that one"
	}
	out = append(out, rv)

	ct := FactLine{Fact: "call timeout", Effect: "not measured (no tool of beta found)"}
	if f.StallMeasured {
		switch {
		case !f.StallAnswered:
			ct.Seen = fmt.Sprintf("a call stalled at beta had no answer after %s (the config asks for %s)", f.StallTook.Round(100*time.Millisecond), f.CallTimeout)
			ct.Effect = "no call timeout: " + f.Timeout.willFail(true) + " (a finding, not a profile error)"
		case f.StallTook > f.CallTimeout+time.Second:
			ct.Seen = fmt.Sprintf("a call stalled at beta was answered after %s (the config asks for %s)", f.StallTook.Round(100*time.Millisecond), f.CallTimeout)
			ct.Effect = "the config's call timeout is not applied: " + f.Timeout.willFail(false)
		default:
			ct.Seen = fmt.Sprintf("a call stalled at beta was answered after %s (the config asks for %s)", f.StallTook.Round(100*time.Millisecond), f.CallTimeout)
			ct.Effect = "the call timeout is enforced"
		}
	}
	out = append(out, ct)

	rc := FactLine{Fact: "recovery", Key: "recovery", Effect: "not measured"}
	if f.Recovery > 0 {
		rc.Seen = fmt.Sprintf("beta's tools were back %s after a restart", roundTook(f.Recovery))
		if s := SuggestRecovery(f.Recovery); s > targets.DefaultRecovery {
			rc.Value = s.String()
			rc.Effect = fmt.Sprintf("steady state after each fault is waited for up to %s (the default %s would leave the later checks not judged)", s, targets.DefaultRecovery)
		} else {
			rc.Effect = fmt.Sprintf("within the default %s", targets.DefaultRecovery)
		}
	}
	out = append(out, rc)

	caps := FactLine{Fact: "capabilities", Seen: "confirmed: " + orNone(capNames(f.Caps)), Key: "capabilities", Value: "[" + strings.Join(capNames(f.Caps), ", ") + "]",
		Effect: "scenarios and checks needing another capability are not applicable; reinit-on-404 is a promise no check here confirms: declare it yourself"}
	out = append(out, caps)
	return out
}

func capNames(cs targets.Capabilities) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// quoteYAML is s as a double-quoted YAML string.
func quoteYAML(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// willFail says which checks of the run will fail: with unanswered (no
// answer before the client gave up), the naming checks of those calls and
// the session's recorded error too. Without counts (nil), in words only.
func (t *TimeoutChecks) willFail(unanswered bool) string {
	if t == nil {
		return "every 'bounded by the call timeout' check will fail"
	}
	n, other := t.Bounded, 0
	if unanswered {
		n, other = t.Bounded+t.Named, t.Other
	}
	s := fmt.Sprintf("the %d 'bounded by the call timeout' checks of the run will fail (in %d scenarios)", n, t.Scenarios)
	if other > 0 {
		s += fmt.Sprintf(", and %d more that need the stalled call to end (the session's recorded error)", other)
	}
	if t.Unpinned > 0 {
		s += fmt.Sprintf("; the %d container scenarios' are not counted", t.Unpinned)
	}
	return s
}
