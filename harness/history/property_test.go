package history

import "testing"

// TestPropertyOf pins the property of a few checks whose names could match
// more than one rule (the first rule wins).
func TestPropertyOf(t *testing.T) {
	for name, want := range map[string]Property{
		"timeout: tools/call names beta":                                                                             PropNamesBackend,
		"timeout: tools/call fails within call timeout + 1 s":                                                        PropBounded,
		"restart: alpha unaffected":                                                                                  PropUnaffected,
		"restart: beta answers again (at most 0 failed calls)":                                                       PropRecovers,
		"all back: alpha answers once every backend is cleared":                                                      PropRecovers,
		"case 1: session created while beta's circuit was open: find_tool never returns beta's tools":                PropOptimizer,
		"case 3: the session created while beta was out, after beta recovered: find_tool never returns beta's tools": PropOptimizer,
		"while open, calls do not reach beta":                                                                        PropBreaker,
		"while open, calls fail fast naming beta":                                                                    PropNamesBackend,
		"health API: beta's keepalive enabled, one session":                                                          PropHealth,
		"beta answers after the cancel":                                                                              PropRecovers,
		"beta's stalled call ends within 3 s of the cancel":                                                          PropCancel,
		"forged-event: the forged answer never reaches the client":                                                   PropForged,
		"beta answers before any fault":                                                                              PropBaseline,
		"the session recovers from 403 on tools/call":                                                                PropSession,
		"scenario ran to the end (aborted at x)":                                                                     PropRuns,
		"health API: beta is not reported serving while it is down":                                                  PropHealthTruth,
		"the advertised revision 2026-07-28 is served: a client of it initializes and calls beta's echo":             PropRevisions,
		"something nobody declared":                                                                                  "",
	} {
		if got := PropertyOf(name); got != want {
			t.Errorf("PropertyOf(%q) = %q, want %q", name, got, want)
		}
	}
	for _, p := range Properties {
		if propertyText[p] == "" {
			t.Errorf("property %q has no text", p)
		}
	}
}
