package kit

import (
	"strings"
	"testing"
)

const scrape = `# HELP vmcp_circuit_breaker_transitions_total Transitions.
# TYPE vmcp_circuit_breaker_transitions_total counter
vmcp_circuit_breaker_transitions_total{backend_id="beta",from="closed",to="open"} 1
vmcp_circuit_breaker_transitions_total{backend_id="beta",from="open",to="half-open"} 1
vmcp_circuit_breaker_transitions_total{backend_id="alpha",from="closed",to="open"} 0
# TYPE vmcp_circuit_breaker_state gauge
vmcp_circuit_breaker_state{backend_id="beta",state="closed"} 1
# TYPE vmcp_call_seconds histogram
vmcp_call_seconds_bucket{backend_id="beta",le="+Inf"} 4
vmcp_call_seconds_sum{backend_id="beta"} 0.5
vmcp_call_seconds_count{backend_id="beta"} 4
`

func TestParseMetrics(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(scrape))
	if err != nil {
		t.Fatal(err)
	}
	const tr = "vmcp_circuit_breaker_transitions_total"
	for _, tc := range []struct {
		name string
		want map[string]string
		sum  float64
	}{
		{tr, map[string]string{"backend_id": "beta"}, 2},
		{tr, map[string]string{"backend_id": "beta", "to": "open"}, 1},
		{tr, nil, 2},
		{tr, map[string]string{"backend_id": "gamma"}, 0},
		{"vmcp_circuit_breaker_state", map[string]string{"state": "closed"}, 1},
		{"vmcp_call_seconds_count", map[string]string{"backend_id": "beta"}, 4},
		{"vmcp_call_seconds_sum", nil, 0.5},
		{"nope", nil, 0},
	} {
		if got := m.Sum(tc.name, tc.want); got != tc.sum {
			t.Errorf("Sum(%s, %v) = %v, want %v", tc.name, tc.want, got, tc.sum)
		}
	}
	if !m.Has(tr) || !m.Has("vmcp_call_seconds_count") || m.Has("nope") {
		t.Error("Has")
	}
	// A line that does not parse is an error, never a silently shorter
	// scrape.
	for _, bad := range []string{scrape + "vmcp_x{backend_id=\"beta\" 1\n", scrape + "vmcp_y not-a-number\n"} {
		if _, err := ParseMetrics(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %q", bad[len(scrape):])
		}
	}
}

// TestRenamed: a gateway's family names are found under ours through the
// profile's metrics mapping (histogram parts too); unmapped names stay.
func TestRenamed(t *testing.T) {
	theirs := strings.NewReplacer("vmcp_circuit_breaker_transitions_total", "gw_breaker_changes_total",
		"vmcp_call_seconds", "gw_upstream_seconds").Replace(scrape)
	m, err := ParseMetrics(strings.NewReader(theirs))
	if err != nil {
		t.Fatal(err)
	}
	if m.Has("vmcp_circuit_breaker_transitions_total") {
		t.Fatal("renamed family found under our name without a mapping")
	}
	r := m.Renamed(map[string]string{"vmcp_circuit_breaker_transitions_total": "gw_breaker_changes_total",
		"vmcp_call_seconds": "gw_upstream_seconds", "vmcp_keepalive_attempt_total": "gw_not_exported_total"})
	if got := r.Sum("vmcp_circuit_breaker_transitions_total", map[string]string{"backend_id": "beta"}); got != 2 {
		t.Errorf("transitions through the mapping: %v", got)
	}
	if got := r.Sum("vmcp_call_seconds_count", nil); got != 4 {
		t.Errorf("histogram count through the mapping: %v", got)
	}
	if r.Has("vmcp_keepalive_attempt_total") || !r.Has("vmcp_circuit_breaker_state") {
		t.Error("a mapped family the gateway lacks must stay absent; an unmapped one keeps its name")
	}
}
