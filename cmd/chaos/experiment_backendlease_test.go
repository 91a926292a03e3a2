package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestExperimentSIGKILLBackendLeaseExpires: an experiment whose control
// URL is a fake backend's own control API (no proxy) says its faults are
// leased, and when the controller is SIGKILLed mid-fault the backend drops
// them once the lease runs out; the gateway serves the backend again.
func TestExperimentSIGKILLBackendLeaseExpires(t *testing.T) {
	_, beta := spawn(t, "--script", writeScript(t, "name: beta\ntools: [{name: echo}]\n"), "--admin", "127.0.0.1:0")
	cfg := writeScript(t, fmt.Sprintf("name: e2e\nbackends:\n  - {name: beta, url: %q}\ntimeouts: {call: 2s, initialize: 2s, list: 2s}\n", beta.URL))
	var gw gatewayReadyLine
	spawnReady(t, &gw, "vmcp", "--config", cfg, "--listen", "127.0.0.1:0")
	const ttl = 2 * time.Second
	file := experimentFile(t, gw.URL, ttl.String(), injectStall+"  - pause: 1m\n", "beta", beta.Admin)
	cmd, out, journal := startExperiment(t, file)
	stderr := killAndAwaitLeaseExpiry(t, cmd, out, journal, beta.Admin, ttl, gw.URL)
	if want := fmt.Sprintf("(lease %s, renewed every", ttl); !strings.Contains(stderr, want) {
		t.Errorf("the inject line does not say %q:\n%s", want, stderr)
	}
}
