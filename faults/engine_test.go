package faults

import (
	"testing"
	"time"
)

// fakeClock is a settable clock for the engine.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestEngine(faults ...Fault) (*Engine, *fakeClock) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	e := NewEngine(1)
	e.Now = clk.now
	e.Set(faults...)
	return e, clk
}

func ptr[T any](v T) *T { return &v }

func TestEngineFlapAlternates(t *testing.T) {
	e, clk := newTestEngine(Fault{Kind: KindFlap, Params: &Flap{On: Duration(100 * time.Millisecond), Off: Duration(50 * time.Millisecond), Fault: &Fault{Kind: KindHTTPStatus, Params: &HTTPStatus{Status: 503}}}})
	var got []bool
	for i := 0; i < 6; i++ { // t = 0, 50, 100, 150, 200, 250 ms
		got = append(got, e.Decide("tools/call", "echo").Fault != nil)
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
	e, clk := newTestEngine(Fault{Kind: KindHTTPStatus, At: Duration(time.Second), For: Duration(time.Second), Params: &HTTPStatus{Status: 500}})
	if e.Decide("ping", "").Fault != nil {
		t.Fatal("active before at")
	}
	clk.advance(time.Second)
	if e.Decide("ping", "").Fault == nil {
		t.Fatal("inactive at at")
	}
	clk.advance(time.Second)
	if e.Decide("ping", "").Fault != nil {
		t.Fatal("active after at+for")
	}
}

func TestEngineProbabilityIsSeededAndRoughlyRight(t *testing.T) {
	run := func() (hits int, pattern string) {
		e, _ := newTestEngine(Fault{Kind: KindHTTPStatus, Probability: ptr(0.3), Seed: 42, Params: &HTTPStatus{Status: 500}})
		for i := 0; i < 1000; i++ {
			hit := e.Decide("tools/call", "x").Fault != nil
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
		Fault{Kind: KindLatency, Params: &Latency{Delay: Duration(10 * time.Millisecond)}},
		Fault{Kind: KindLatency, Match: Match{Tool: "db_*"}, Params: &Latency{Delay: Duration(5 * time.Millisecond)}},
		Fault{Kind: KindJSONRPCError, Match: Match{Method: "tools/call", Tool: "db_*"}, Params: &JSONRPCError{Code: -1, Message: "m"}},
	)
	d := e.Decide("tools/call", "db_query")
	if d.Delay != 15*time.Millisecond || d.Fault == nil || d.Fault.Kind != KindJSONRPCError || d.Label != "latency#0,latency#1,jsonrpc_error#2" {
		t.Fatalf("db_query: %+v", d)
	}
	d = e.Decide("tools/call", "echo")
	if d.Delay != 10*time.Millisecond || d.Fault != nil {
		t.Fatalf("echo: %+v", d)
	}
	d = e.Decide("prompts/get", "db_prompt")
	if d.Fault != nil {
		t.Fatalf("method mismatch matched: %+v", d)
	}
}

func TestEngineToolErrorOnlyOnToolsCall(t *testing.T) {
	e, _ := newTestEngine(Fault{Kind: KindToolError, Params: &ToolError{Text: "x"}})
	if e.Decide("tools/list", "").Fault != nil {
		t.Fatal("tool_error applied to tools/list")
	}
	if e.Decide("tools/call", "a").Fault == nil {
		t.Fatal("tool_error did not apply to tools/call")
	}
}

func TestEngineScheduledDownAndExpire(t *testing.T) {
	e, clk := newTestEngine(
		Fault{Kind: KindCrash, At: Duration(time.Second), Params: &Crash{Mode: CrashDown}},
		Fault{Kind: KindSessionExpire},
	)
	down, expire := e.Due(true)
	if down || !expire {
		t.Fatalf("t=0: down=%v expire=%v", down, expire)
	}
	if _, expire = e.Due(true); expire {
		t.Fatal("one-shot expiry fired twice")
	}
	clk.advance(time.Second)
	if down, _ = e.Due(true); !down {
		t.Fatal("down not active at its at")
	}
	if d := e.Decide("tools/call", "x"); d.Fault != nil {
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
	e, _ := newTestEngine(Fault{Kind: KindStall, Match: Match{Tool: "slow"}, Params: &Stall{Stage: StageBeforeHeaders}})
	held := e.Decide("tools/call", "slow")
	if held.Fault == nil || held.Released == nil {
		t.Fatalf("stall not decided: %+v", held)
	}
	// Adding faults releases nothing, not even a stall on another tool.
	e.Add([]Fault{{Kind: KindStall, Match: Match{Tool: "other"}}, {Kind: KindHTTPStatus, Match: Match{Tool: "x"}, Params: &HTTPStatus{Status: 500}}}...)
	other := e.Decide("tools/call", "other")
	if closed(held.Released) || closed(other.Released) {
		t.Fatal("adding faults released a stall")
	}
	if other.Released == held.Released {
		t.Fatal("two faults share one release channel")
	}
	// Replacing releases every stall held by a replaced fault; the new
	// faults hold their own.
	e.Set([]Fault{{Kind: KindStall, Match: Match{Tool: "slow"}}}...)
	if !closed(held.Released) || !closed(other.Released) {
		t.Fatal("replacing the faults did not release their stalls")
	}
	again := e.Decide("tools/call", "slow")
	if closed(again.Released) {
		t.Fatal("a new stall starts released")
	}
	// Clearing releases it.
	e.Set()
	if !closed(again.Released) {
		t.Fatal("clearing the faults did not release the stall")
	}
	if d := e.Decide("tools/call", "slow"); d.Fault != nil || d.Released != nil {
		t.Fatalf("no fault, but decision %+v", d)
	}
}

// TestEngineKeepsItsOwnParams: the engine applies defaults to its own copy
// of a fault's parameters, never to the caller's struct (one Fault value is
// often set on several backends at once), and List hands out copies.
func TestEngineKeepsItsOwnParams(t *testing.T) {
	mine := &Crash{}
	nestedMine := &Stall{}
	e := NewEngine(1, Fault{Kind: KindCrash, Params: mine},
		Fault{Kind: KindFlap, Params: &Flap{On: Duration(time.Second), Off: Duration(time.Second), Fault: &Fault{Kind: KindStall, Params: nestedMine}}})
	if *mine != (Crash{}) || *nestedMine != (Stall{}) {
		t.Fatalf("the engine wrote to the caller's parameters: %+v %+v", mine, nestedMine)
	}
	got := e.List()
	if p := got[0].Params.(*Crash); p == mine || p.Mode != CrashEOF {
		t.Fatalf("engine's crash = %p %+v, want its own copy with defaults", p, p)
	}
	got[0].Params.(*Crash).Mode = CrashDown
	if e.List()[0].Params.(*Crash).Mode != CrashEOF {
		t.Fatal("List shares the engine's parameters")
	}
	if n := got[1].Effective().Params.(*Stall); n == nestedMine || n.Stage != StageBeforeHeaders {
		t.Fatalf("flap's nested stall = %+v, want its own copy with defaults", n)
	}
}
