// Package fullrun builds synthetic results of a full run of the scenario
// catalogue, with the real model types (history.Results), for tests that
// hold the size bounds of results files, reports and scorecards. Its
// shape is a real run's: `chaos run` of the 40-scenario catalogue
// (measured 2026-12-02: 32 non-container scenarios, 1,100 checks, 2,400
// calls of which 1,100 are a check's evidence, 600 fault events; the two
// load scenarios record 1,000 to 4,500 calls each, the most under load).
package fullrun

import (
	"fmt"
	"strings"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// shape is one kind of scenario: how many of it the catalogue has and
// what one records.
type shape struct {
	group                                     string
	count                                     int
	checks, calls, faults, transitions, notes int
}

// catalogue is the real catalogue's shape (40 scenarios).
var catalogue = []shape{
	{"wrapping", 4, 139, 210, 86, 0, 10},
	{"hang", 4, 47, 80, 30, 0, 2},
	{"hang-cancel", 4, 5, 7, 2, 0, 3},
	{"hang-kill", 3, 5, 11, 2, 0, 2},
	{"hang-pause", 2, 5, 11, 2, 0, 2},
	{"session", 2, 21, 26, 8, 10, 2},
	{"restart", 4, 13, 26, 3, 0, 2},
	{"load", 2, 5, 4500, 10, 0, 2},
	{"breaker", 2, 15, 21, 2, 11, 2},
	{"keepalive", 2, 11, 6, 2, 0, 2},
	{"optimizer", 3, 18, 37, 7, 15, 3},
	{"container-kill", 8, 12, 40, 4, 4, 3},
}

var variants = []string{"legacy/streamable-http", "legacy/sse", "modern/streamable-http", "modern/sse"}

// Scenarios is how many scenarios Results builds.
func Scenarios() int {
	n := 0
	for _, s := range catalogue {
		n += s.count
	}
	return n
}

// Results builds a run of the full catalogue against target. With failed,
// every check fails and every call ends in an error naming no backend,
// with a long error text; else every check passes and calls succeed.
// The checks' properties cycle through the whole catalogue of
// properties, so every property has failures in every large scenario.
func Results(target string, failed bool) *history.Results {
	start := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	r := &history.Results{SchemaVersion: history.SchemaVersion, Started: start, Target: target,
		Capabilities: []string{"session-api", "health-api", "breaker", "keepalive", "metrics", "optimizer"}, HarnessVersion: "v0.0.0-synthetic"}
	at := start
	for _, sh := range catalogue {
		for i := range sh.count {
			name := fmt.Sprintf("%s/%s", sh.group, variants[i%len(variants)])
			if i >= len(variants) {
				name += fmt.Sprintf("-%d", i/len(variants)+1)
			}
			s := scenario(name, sh, failed)
			s.Started = at
			at = at.Add(s.Duration.D())
			r.Scenarios = append(r.Scenarios, s)
		}
	}
	return r
}

// errText is a realistic gateway error, as long as real ones get.
const errText = `calling "tools/call" on backend beta: transport error: request failed with status 502: ` +
	`{"jsonrpc":"2.0","id":17,"error":{"code":-32603,"message":"upstream connect error or disconnect/reset before headers. reset reason: connection termination"}}`

func scenario(name string, sh shape, failed bool) history.ScenarioResult {
	d := 3 * time.Second
	s := history.ScenarioResult{Name: name, Labels: []string{sh.group, strings.Split(name, "/")[1]}, Verdict: history.VerdictPassed, Duration: history.Millis(d)}
	if failed {
		s.Verdict, s.Reason = history.VerdictFailed, fmt.Sprintf("%d checks failed; first: %s", sh.checks, strings.Repeat("the gateway's error does not name the backend; ", 4))
	}
	total := sh.calls + sh.faults + sh.transitions + sh.notes
	step := d / time.Duration(total+1)
	var callSeqs []int
	// The faults, transitions and notes spread evenly among the calls.
	var others []history.EventKind
	for _, k := range []struct {
		kind history.EventKind
		n    int
	}{{history.EventFault, sh.faults}, {history.EventTransition, sh.transitions}, {history.EventNote, sh.notes}} {
		for range k.n {
			others = append(others, k.kind)
		}
	}
	for seq := 1; seq <= total; seq++ {
		at := step * time.Duration(seq)
		e := history.Event{Seq: seq, At: history.Millis(at)}
		kind := history.EventCall
		if n := len(others); seq*n/total > (seq-1)*n/total {
			kind = others[(seq-1)*n/total]
		}
		switch kind {
		case history.EventFault:
			action := []string{"set", "clear"}[seq%2]
			e.Kind, e.Fault = history.EventFault, &history.FaultRecord{Backend: "beta", Action: action, Kinds: []string{"http_status"}, Detail: "http_status 502 [tools/call]", Duration: history.Millis(60 * time.Microsecond)}
		case history.EventTransition:
			e.Kind, e.Transition = history.EventTransition, &history.TransitionRecord{Backend: "beta", Aspect: "breaker", From: "closed", To: "open", Source: "GET /api/backends/health"}
		case history.EventNote:
			e.Kind, e.Note = history.EventNote, "topology up: target reference, 2 backends, 3 tools each; steady state reached after 4 calls"
		default:
			took := time.Duration(300+seq%700) * time.Microsecond
			c := &history.CallRecord{Client: fmt.Sprintf("c%d", seq%16), Revision: history.Revision(strings.Split(name, "/")[1]), Protocol: "2025-11-25",
				Session: fmt.Sprintf("vmcp-%032x", seq), Method: "tools/call", Target: "beta_echo", Outcome: history.OutcomeOK,
				Start: history.Millis(at), End: history.Millis(at + took), Duration: history.Millis(took), Timeout: history.Millis(5750 * time.Millisecond),
				Marker: fmt.Sprintf("m24554-%d", seq)}
			if failed {
				// Distinct texts: a report's error samples fill up.
				c.Outcome, c.IsError, c.Error, c.ErrorKind = history.OutcomeError, true, fmt.Sprintf("%s (attempt %d)", errText, seq), "http_status"
			} else {
				c.Backend, c.Meta = "beta", map[string]any{"vmcp/backend": "beta"}
			}
			e.Kind, e.Call = history.EventCall, c
			callSeqs = append(callSeqs, seq)
		}
		s.Events = append(s.Events, e)
	}
	for i := range sh.checks {
		p := history.Properties[i%len(history.Properties)]
		c := history.Check{Name: fmt.Sprintf("%s: %s #%d", "http_status 502 on tools/call", p.Text(), i), Verdict: history.CheckPassed,
			Expected: "the error names beta, within the call timeout, and alpha keeps answering",
			Observed: "tools/call beta_echo: backend_unavailable in 412µs naming beta; alpha_echo ok in 210µs",
			At:       history.Millis(step * time.Duration(i+1)), Took: history.Millis(time.Duration(200+i%50) * time.Microsecond),
			Property: p, Fault: "http_status 502 on tools/call", Transport: "streamable-http", Revision: "2025-11-25"}
		for j := range min(3, len(callSeqs)) {
			// Neighbouring checks share calls, as real ones do (a
			// wrapping scenario: 139 checks, 118 of its 210 calls are
			// evidence).
			c.Calls = append(c.Calls, callSeqs[(i+j)%len(callSeqs)])
		}
		if failed {
			c.Verdict, c.Observed = history.CheckFailed, "tools/call beta_echo: error in 412µs not naming beta: "+errText
		}
		s.Checks = append(s.Checks, c)
	}
	return s
}
