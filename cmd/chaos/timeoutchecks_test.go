package main

import (
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
)

// TestTimeoutChecksCountTheRun: the "no call timeout" fact of chaos
// profile check counts the checks of the run the profile selects that a
// gateway without a call timeout fails (scenarios.CallTimeoutChecks,
// pinned from fixture-b-broken's runs): every one for a gateway with every
// capability, fewer for a gateway that takes streamable-HTTP backends
// only, offers tools only and has no session API, each as counted here by
// the scenarios' labels and the checks' names; the container scenarios
// only for a target with an image, and then as not counted.
func TestTimeoutChecksCountTheRun(t *testing.T) {
	t.Parallel()
	all := scenarios.Catalogue()
	expect := func(keep func(s scenarios.Scenario, check string) bool) (bounded, named, other, scs int) {
		for _, s := range all {
			if s.HasLabel(scenarios.LabelContainer) {
				continue
			}
			in := false
			for _, c := range scenarios.CallTimeoutChecks(s) {
				if !keep(s, c) {
					continue
				}
				in = true
				switch {
				case strings.HasSuffix(c, " names beta"):
					named++
				case strings.Contains(c, "lastError"):
					other++
				default:
					bounded++
				}
			}
			if in {
				scs++
			}
		}
		return
	}

	full := targets.Exec{TargetName: "gw", Caps: targets.AllCapabilities}
	n := countTimeoutChecks(all, full)
	b, nm, o, s := expect(func(scenarios.Scenario, string) bool { return true })
	if n.Bounded != b || n.Named != nm || n.Other != o || n.Scenarios != s || n.Unpinned != 0 || b == 0 || nm == 0 || o == 0 {
		t.Errorf("every capability: %+v, want %d bounded, %d naming, %d other in %d scenarios", n, b, nm, o, s)
	}

	narrow := targets.Exec{TargetName: "gw", Caps: targets.Capabilities{targets.CapHealthAPI, targets.CapMetrics},
		Transports: targets.Transports{"streamable-http"}, Methods: targets.Methods{"tools"}}
	m := countTimeoutChecks(all, narrow)
	b, nm, o, s = expect(func(s scenarios.Scenario, c string) bool {
		return !s.HasLabel("sse") && !strings.Contains(c, "resources/") && !strings.Contains(c, "prompts/") && !strings.Contains(c, "lastError")
	})
	if m.Bounded != b || m.Named != nm || m.Other != o || m.Scenarios != s || m.Bounded >= n.Bounded || m.Named >= n.Named || m.Other != 0 {
		t.Errorf("streamable HTTP, tools, no session API: %+v, want %d bounded, %d naming, %d other in %d scenarios (of %+v)", m, b, nm, o, s, n)
	}

	withImage := full
	withImage.Image = "gw:1"
	containers := 0
	for _, s := range all {
		if s.HasLabel(scenarios.LabelContainer) {
			containers++
		}
	}
	if w := countTimeoutChecks(all, withImage); w.Unpinned != containers || containers == 0 || w.Bounded != n.Bounded {
		t.Errorf("with a gateway image: %+v, want the %d container scenarios not counted, the rest as %+v", w, containers, n)
	}

	// The run's selection, not the catalogue: one scenario.
	hang, _ := scenarios.Select(all, "hang/legacy/sse")
	if h := countTimeoutChecks(hang, full); h.Bounded != len(scenarios.CallTimeoutChecks(hang[0])) || h.Scenarios != 1 {
		t.Errorf("hang/legacy/sse alone: %+v", h)
	}
}
