package fakebackends

import (
	"testing"
	"time"
)

// fakeClock is a settable clock for the engine.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestEngine(faults ...Fault) (*engine, *fakeClock) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	e := newEngine(1)
	e.now = clk.now
	e.set(faults)
	return e, clk
}

func TestEngineFlapAlternates(t *testing.T) {
	e, clk := newTestEngine(Fault{Kind: KindFlap, On: Duration(100 * time.Millisecond), Off: Duration(50 * time.Millisecond),
		Fault: &Fault{Kind: KindHTTPStatus, Status: 503}})
	var got []bool
	for i := 0; i < 6; i++ { // t = 0, 50, 100, 150, 200, 250 ms
		got = append(got, e.decide("tools/call", "echo").fault != nil)
		clk.advance(50 * time.Millisecond)
	}
	want := []bool{true, true, false, true, true, false}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("flap on 100ms/off 50ms sampled every 50ms = %v, want %v", got, want)
		}
	}
}

func TestEngineAtForWindow(t *testing.T) {
	e, clk := newTestEngine(Fault{Kind: KindHTTPStatus, Status: 500, At: Duration(time.Second), For: Duration(time.Second)})
	if e.decide("ping", "").fault != nil {
		t.Fatal("active before at")
	}
	clk.advance(time.Second)
	if e.decide("ping", "").fault == nil {
		t.Fatal("inactive at at")
	}
	clk.advance(time.Second)
	if e.decide("ping", "").fault != nil {
		t.Fatal("active after at+for")
	}
}

func TestEngineProbabilityIsSeededAndRoughlyRight(t *testing.T) {
	run := func() (hits int, pattern string) {
		e, _ := newTestEngine(Fault{Kind: KindHTTPStatus, Status: 500, Probability: ptr(0.3), Seed: 42})
		for i := 0; i < 1000; i++ {
			hit := e.decide("tools/call", "x").fault != nil
			if hit {
				hits++
			}
			if i < 32 {
				if hit {
					pattern += "1"
				} else {
					pattern += "0"
				}
			}
		}
		return hits, pattern
	}
	h1, p1 := run()
	h2, p2 := run()
	if p1 != p2 || h1 != h2 {
		t.Fatalf("same seed, different runs: %s/%d vs %s/%d", p1, h1, p2, h2)
	}
	if h1 < 230 || h1 > 370 {
		t.Fatalf("probability 0.3 hit %d of 1000", h1)
	}
}

func TestEngineMatchGlobAndLatencyStacks(t *testing.T) {
	e, _ := newTestEngine(
		Fault{Kind: KindLatency, Delay: Duration(10 * time.Millisecond)},
		Fault{Kind: KindLatency, Delay: Duration(5 * time.Millisecond), Match: Match{Tool: "db_*"}},
		Fault{Kind: KindJSONRPCError, Code: -1, Message: "m", Match: Match{Method: "tools/call", Tool: "db_*"}},
	)
	d := e.decide("tools/call", "db_query")
	if d.delay != 15*time.Millisecond || d.fault == nil || d.fault.Kind != KindJSONRPCError || d.label != "latency#0,latency#1,jsonrpc_error#2" {
		t.Fatalf("db_query: %+v", d)
	}
	d = e.decide("tools/call", "echo")
	if d.delay != 10*time.Millisecond || d.fault != nil {
		t.Fatalf("echo: %+v", d)
	}
	d = e.decide("prompts/get", "db_prompt")
	if d.fault != nil {
		t.Fatalf("method mismatch matched: %+v", d)
	}
}

func TestEngineToolErrorOnlyOnToolsCall(t *testing.T) {
	e, _ := newTestEngine(Fault{Kind: KindToolError, Text: "x"})
	if e.decide("tools/list", "").fault != nil {
		t.Fatal("tool_error applied to tools/list")
	}
	if e.decide("tools/call", "a").fault == nil {
		t.Fatal("tool_error did not apply to tools/call")
	}
}

func TestEngineScheduledDownAndExpire(t *testing.T) {
	e, clk := newTestEngine(
		Fault{Kind: KindCrash, Mode: CrashDown, At: Duration(time.Second)},
		Fault{Kind: KindSessionExpire},
	)
	down, expire := e.scheduled()
	if down || !expire {
		t.Fatalf("t=0: down=%v expire=%v", down, expire)
	}
	if _, expire = e.scheduled(); expire {
		t.Fatal("one-shot expiry fired twice")
	}
	clk.advance(time.Second)
	if down, _ = e.scheduled(); !down {
		t.Fatal("down not active at its at")
	}
	if d := e.decide("tools/call", "x"); d.fault != nil {
		t.Fatalf("schedule-only faults applied per request: %+v", d)
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestEngineReleaseOnlyWhenTheHoldingFaultIsRemoved(t *testing.T) {
	e, _ := newTestEngine(Fault{Kind: KindStall, Stage: StageBeforeHeaders, Match: Match{Tool: "slow"}})
	held := e.decide("tools/call", "slow")
	if held.fault == nil || held.released == nil {
		t.Fatalf("stall not decided: %+v", held)
	}
	// Adding faults releases nothing, not even a stall on another tool.
	e.add([]Fault{{Kind: KindStall, Match: Match{Tool: "other"}}, {Kind: KindHTTPStatus, Status: 500, Match: Match{Tool: "x"}}})
	other := e.decide("tools/call", "other")
	if closed(held.released) || closed(other.released) {
		t.Fatal("adding faults released a stall")
	}
	if other.released == held.released {
		t.Fatal("two faults share one release channel")
	}
	// Replacing releases every stall held by a replaced fault; the new
	// faults hold their own.
	e.set([]Fault{{Kind: KindStall, Match: Match{Tool: "slow"}}})
	if !closed(held.released) || !closed(other.released) {
		t.Fatal("replacing the faults did not release their stalls")
	}
	again := e.decide("tools/call", "slow")
	if closed(again.released) {
		t.Fatal("a new stall starts released")
	}
	// Clearing releases it.
	e.set(nil)
	if !closed(again.released) {
		t.Fatal("clearing the faults did not release the stall")
	}
	if d := e.decide("tools/call", "slow"); d.fault != nil || d.released != nil {
		t.Fatalf("no fault, but decision %+v", d)
	}
}
