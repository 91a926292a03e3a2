package reports

import (
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

func ms(n float64) history.Millis {
	return history.Millis(time.Duration(n * float64(time.Millisecond)))
}

func fault(at float64, backend, action string, kinds ...string) history.Event {
	return history.Event{Kind: history.EventFault, At: ms(at), Fault: &history.FaultRecord{Backend: backend, Action: action, Kinds: kinds, Detail: strings.Join(kinds, " ")}}
}

func call(start, took float64, target string, outcome history.Outcome, backend string) *history.CallRecord {
	return &history.CallRecord{Method: "tools/call", Target: target, Outcome: outcome, Backend: backend,
		Start: ms(start), End: ms(start + took), Duration: ms(took)}
}

// TestFaultWindows pairs fault actions into windows: set..clear, an
// inject joining the open window, kill..respawn, pause..resume, a set
// replacing the previous one, restart and expire as moments, and a window
// still open at the end.
func TestFaultWindows(t *testing.T) {
	evs := []history.Event{
		fault(10, "beta", "set", "http_status"), fault(12, "beta", "inject", "latency"), fault(20, "beta", "clear"),
		fault(30, "alpha", "kill"), fault(40, "alpha", "respawn"),
		fault(50, "beta", "pause"), fault(60, "beta", "resume"),
		fault(70, "beta", "set", "crash"), fault(75, "beta", "set", "stall"), fault(80, "beta", "set"),
		fault(85, "alpha", "restart"), fault(86, "alpha", "expire"),
		fault(90, "beta", "set", "crash"),
	}
	ws := faultWindows(evs, 100*time.Millisecond)
	var got []string
	for _, w := range ws {
		got = append(got, strings.TrimSpace(w.Label()+" "+fmtDur(w.Start)+"-"+fmtDur(w.End)+" "+w.Closer))
	}
	want := []string{
		"beta: set http_status; +latency 10.0ms-20.0ms clear",
		"alpha: kill 30.0ms-40.0ms respawn",
		"beta: pause 50.0ms-60.0ms resume",
		"beta: set crash 70.0ms-75.0ms set",
		"beta: set stall 75.0ms-80.0ms set (none)",
		"alpha: restart 85.0ms-85.0ms restart",
		"alpha: expire 86.0ms-86.0ms expire",
		"beta: set crash 90.0ms-100.0ms",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("windows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRecovery: the time to first error counts from the window's start;
// recovery from its end to the end of the first ok call to a target that
// failed, counting the failures between; a window open at the end, or
// with no failed call, has no recovery.
func TestRecovery(t *testing.T) {
	ws := []window{{Backend: "beta", Action: "set", Start: ms(10).D(), End: ms(20).D(), Closer: "clear"}}
	calls := []*history.CallRecord{
		call(5, 1, "beta_echo", history.OutcomeOK, ""),
		call(11, 2, "beta_echo", history.OutcomeBackendUnavailable, "beta"),
		call(14, 1, "alpha_echo", history.OutcomeError, "alpha"), // another backend's error: not this fault's
		call(21, 3, "beta_echo", history.OutcomeTimeout, ""),
		call(25, 1, "alpha_echo", history.OutcomeOK, ""), // not an affected target
		call(30, 2, "beta_echo", history.OutcomeOK, ""),
	}
	fv := analyseWindows(ws, calls, 40*time.Millisecond)[0]
	if fv.FirstError != "3.00ms after the fault started (tools/call beta_echo)" {
		t.Errorf("first error: %q", fv.FirstError)
	}
	if fv.Recovery != "12.0ms after clear (tools/call beta_echo ok)" || fv.FailedAfter != 1 || fv.recoveryTook != 12*time.Millisecond {
		t.Errorf("recovery: %q, %d failed after, took %s", fv.Recovery, fv.FailedAfter, fv.recoveryTook)
	}
	if fv.Before.N != 1 || fv.During.N != 2 || fv.During.Errors != 2 || fv.After.N != 3 || fv.After.Errors != 1 || fv.During.Max != "2.00ms" {
		t.Errorf("phases: before %+v during %+v after %+v", fv.Before, fv.During, fv.After)
	}
	if s := storyOf([]faultView{fv}); s != "1 fault window(s) on beta; slowest recovery 12.0ms (beta: set); 1 call(s) failed after a fault had ended" {
		t.Errorf("story: %q", s)
	}
	open := window{Backend: "beta", Action: "kill", Start: ms(10).D(), End: ms(40).D()}
	if fv := analyseWindows([]window{open}, calls, 40*time.Millisecond)[0]; fv.Recovery != "fault active until the end" || !fv.Active {
		t.Errorf("open window: %+v", fv)
	}
	unseen := window{Backend: "beta", Action: "set", Start: ms(10).D(), End: ms(35).D(), Closer: "clear"}
	if fv := analyseWindows([]window{unseen}, calls, 40*time.Millisecond)[0]; !strings.HasPrefix(fv.Recovery, "not observed") || fv.unrecovered {
		t.Errorf("no call after the window: %+v", fv)
	}
	never := window{Backend: "beta", Action: "set", Start: ms(10).D(), End: ms(20).D(), Closer: "clear"}
	if fv := analyseWindows([]window{never}, calls[:4], 40*time.Millisecond)[0]; !strings.HasPrefix(fv.Recovery, "not recovered") || !fv.unrecovered || fv.FailedAfter != 1 {
		t.Errorf("only failures after the window: %+v", fv)
	}
	quiet := window{Backend: "gamma", Action: "set", Start: ms(26).D(), End: ms(27).D(), Closer: "clear"}
	if fv := analyseWindows([]window{quiet}, calls, 40*time.Millisecond)[0]; fv.Recovery != "no call failed" {
		t.Errorf("quiet window: %+v", fv)
	}
}
