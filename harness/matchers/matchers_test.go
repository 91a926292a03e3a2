package matchers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"

	"github.com/mark3labs/mcp-go/mcp"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, runtimes.LeakOptions()...)
}

func rec(outcome history.Outcome, backend, errText string, d time.Duration) history.CallRecord {
	return history.CallRecord{Method: "tools/call", Target: backend + "_echo", Outcome: outcome, Backend: backend, Error: errText, Duration: history.Millis(d)}
}

func toolResult(isError bool, text string, meta map[string]any) *mcp.CallToolResult {
	r := &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{mcp.TextContent{Type: "text", Text: text}}}
	if meta != nil {
		r.Meta = &mcp.Meta{AdditionalFields: meta}
	}
	return r
}

func TestBeBackendUnavailable(t *testing.T) {
	g := NewWithT(t)
	unavailable := rec(history.OutcomeBackendUnavailable, "beta", `backend "beta" unavailable: HTTP 403 Forbidden`, time.Millisecond)
	g.Expect(unavailable).To(BeBackendUnavailable("beta"))
	g.Expect(&unavailable).NotTo(BeBackendUnavailable("alpha"))
	g.Expect(history.Event{Kind: history.EventCall, Call: &unavailable}).To(BeBackendUnavailable("beta"))

	// Successes and client timeouts do not match, even when the text names
	// the backend; nor does a text that names no backend.
	g.Expect(rec(history.OutcomeOK, "beta", "", 0)).NotTo(BeBackendUnavailable("beta"))
	g.Expect(rec(history.OutcomeToolError, "beta", "tool failed", 0)).NotTo(BeBackendUnavailable("beta"))
	g.Expect(rec(history.OutcomeTimeout, "", `context deadline exceeded`, 0)).NotTo(BeBackendUnavailable("beta"))
	g.Expect(rec(history.OutcomeTimeout, "beta", `backend "beta" unavailable: context deadline exceeded`, 0)).NotTo(BeBackendUnavailable("beta"))

	// Any gateway's wording: the text names the backend as a whole word,
	// bare or quoted, in any case.
	for _, text := range []string{`upstream server beta failed: HTTP 403`, `Backend 'BETA' is down`, `beta: connection refused`,
		`call to "beta" timed out after 5s`, `backend "beta" unavailable: HTTP 403 Forbidden`} {
		g.Expect(toolResult(true, text, nil)).To(BeBackendUnavailable("beta"), text)
		g.Expect(errors.New(text)).To(BeBackendUnavailable("beta"), text)
		g.Expect(errors.New(text)).NotTo(BeBackendUnavailable("alpha"), text)
	}
	// ...but not a longer name or identifier that contains it, another
	// backend, no backend at all, or the backend's own error.
	for _, text := range []string{`tool beta_echo failed`, `backend "beta-2" unavailable: reset`, `backend "alphabeta" unavailable`,
		`backend "alpha" unavailable: connection reset`, `upstream unavailable: connection reset`, `backend "beta" error: -32000 boom`,
		`not found: tool "beta_echo"`, `tool "beta__echo" not found`} {
		g.Expect(toolResult(true, text, nil)).NotTo(BeBackendUnavailable("beta"), text)
		g.Expect(errors.New(text)).NotTo(BeBackendUnavailable("beta"), text)
	}
	g.Expect(toolResult(true, `beta failed`, map[string]any{history.MetaBackend: "beta", history.MetaErrorKind: "jsonrpc_error"})).NotTo(BeBackendUnavailable("beta"))
	// The name of what was called is not the backend named, whatever the
	// gateway's naming scheme (a gateway answering a call to an unhealthy
	// backend with "tool not found" does not name the backend).
	for _, tc := range [][2]string{{"echo@beta", `unknown tool: echo@beta`}, {"beta.echo", `Tool 'BETA.ECHO' not found`},
		{"mem://beta/readme", `resource mem://beta/readme not found`}} {
		rec := history.CallRecord{Method: "tools/call", Target: tc[0], Outcome: history.OutcomeError, Error: tc[1]}
		g.Expect(rec).NotTo(BeBackendUnavailable("beta"), tc[1])
		rec.Error = tc[1] + `: backend beta unavailable`
		g.Expect(rec).To(BeBackendUnavailable("beta"), rec.Error)
	}

	// Raw mcp-go outcomes.
	meta := map[string]any{history.MetaBackend: "beta", history.MetaErrorKind: "http_status"}
	g.Expect(toolResult(true, `backend "beta" unavailable: connection reset`, meta)).To(BeBackendUnavailable("beta"))
	g.Expect(toolResult(true, `backend "beta" unavailable: connection reset`, nil)).To(BeBackendUnavailable("beta"))
	g.Expect(toolResult(true, `backend "beta" unavailable: connection reset`, map[string]any{history.MetaBackend: "alpha"})).NotTo(BeBackendUnavailable("beta"))
	g.Expect(toolResult(false, `backend "beta" unavailable: looks like it`, nil)).NotTo(BeBackendUnavailable("beta"))
	g.Expect(toolResult(true, `my own tool error`, nil)).NotTo(BeBackendUnavailable("beta"))
	g.Expect(errors.New(`backend "beta" unavailable: timed out after 5s`)).To(BeBackendUnavailable("beta"))
	g.Expect(Result(nil, errors.New(`backend "beta" unavailable: x`))).To(BeBackendUnavailable("beta"))
	g.Expect(Result(toolResult(false, "ok", nil), nil)).NotTo(BeBackendUnavailable("beta"))

	// Failure messages say why.
	m := BeBackendUnavailable("beta")
	ok, err := m.Match(rec(history.OutcomeToolError, "beta", "tool failed", 0))
	g.Expect(ok).To(BeFalse())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.FailureMessage(nil)).To(ContainSubstring(`does not name "beta"`))

	// Wrong types are errors, not mismatches.
	_, err = BeBackendUnavailable("beta").Match(42)
	g.Expect(err).To(HaveOccurred())
	_, err = BeBackendUnavailable("beta").Match(nil)
	g.Expect(err).To(HaveOccurred())
}

func TestReturnWithin(t *testing.T) {
	g := NewWithT(t)
	r := history.NewRecorder("hang")
	fast := rec(history.OutcomeBackendUnavailable, "beta", "x", 800*time.Microsecond)
	slow := rec(history.OutcomeTimeout, "beta", "x", 3*time.Second)
	g.Expect(fast).To(ReturnWithin(time.Second).RecordingTo(r))
	g.Expect(slow).NotTo(ReturnWithin(time.Second).RecordingTo(r).As("stall_ms"))
	g.Expect(r.Figures()).To(HaveKeyWithValue("latency_ms.tools/call.beta_echo", 0.8))
	g.Expect(r.Figures()).To(HaveKeyWithValue("stall_ms", 3000.0))
	m := ReturnWithin(time.Second)
	ok, _ := m.Match(slow)
	g.Expect(ok).To(BeFalse())
	g.Expect(m.FailureMessage(nil)).To(ContainSubstring("it took 3s"))
	_, err := ReturnWithin(time.Second).Match(errors.New("x"))
	g.Expect(err).To(HaveOccurred())
}

func TestHaveOutcome(t *testing.T) {
	g := NewWithT(t)
	g.Expect(rec(history.OutcomeTimeout, "", "", 0)).To(HaveOutcome(history.OutcomeTimeout))
	g.Expect(rec(history.OutcomeOK, "", "", 0)).NotTo(HaveOutcome(history.OutcomeTimeout))
	_, err := HaveOutcome(history.OutcomeOK).Match(errors.New("x"))
	g.Expect(err).To(HaveOccurred())
}

func TestHaveBackendState(t *testing.T) {
	g := NewWithT(t)
	health := `{"backends": {"beta": {"status": "unhealthy", "circuit": {"state": "open"}}, "alpha": {"status": "healthy", "circuit": {"state": "closed"}}}}`
	g.Expect(health).To(HaveBackendState("beta", "unhealthy"))
	g.Expect([]byte(health)).To(HaveBackendState("alpha", "healthy"))
	g.Expect(health).NotTo(HaveBackendState("beta", "healthy"))
	g.Expect(health).To(HaveBreakerState("beta", "open"))
	g.Expect(health).NotTo(HaveBreakerState("alpha", "open"))
	g.Expect(health).NotTo(HaveBackendState("gamma", "healthy"))

	// A session status value (marshalled to JSON).
	session := vmcp.SessionStatus{ID: "s", Backends: map[string]vmcp.MemberStatus{
		"beta": {State: vmcp.StateError, LastError: `backend "beta" unavailable: HTTP 403 Forbidden`},
	}}
	g.Expect(session).To(HaveBackendState("beta", "error"))
	m := HaveBackendState("beta", "connected")
	ok, err := m.Match(session)
	g.Expect(ok).To(BeFalse())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.FailureMessage(nil)).To(ContainSubstring("HTTP 403"))
	m = HaveBackendState("nope", "connected")
	_, _ = m.Match(session)
	g.Expect(m.FailureMessage(nil)).To(ContainSubstring("not listed"))

	states := targets.BackendStates{"beta": {Name: "beta", State: "connected"}}
	g.Expect(states).To(HaveBackendState("beta", "connected"))
	_, err = HaveBackendState("beta", "x").Match("not json")
	g.Expect(err).To(HaveOccurred())
}

// TestMatchersOnRealCalls runs the matchers on calls through the reference
// gateway.
func TestMatchersOnRealCalls(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sc := func(name string) *fakebackends.Script {
		return &fakebackends.Script{Name: name, Tools: []fakebackends.ToolSpec{{Name: "echo"}, {Name: "fail"}},
			Faults: []faults.Fault{{Kind: faults.KindToolError, Match: faults.Match{Tool: "fail"}, Params: &faults.ToolError{Text: "my own error"}}}}
	}
	env, err := harness.Start(ctx, harness.Topology{Backends: []harness.BackendSpec{{Script: sc("alpha")}, {Script: sc("beta")}}})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(env.Close(context.Background())).To(Succeed()) }()
	c, err := env.Client(ctx, history.RevisionLegacy)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(env.SetFaults(ctx, "beta", faults.Fault{Kind: faults.KindCrash, Match: faults.Match{Tool: "echo"}, Params: &faults.Crash{Mode: faults.CrashReset}})).To(Succeed())
	call := c.CallTool(ctx, "beta_echo", nil)
	g.Expect(call).To(BeBackendUnavailable("beta"))
	g.Expect(call).NotTo(BeBackendUnavailable("alpha"))
	g.Expect(call).To(ReturnWithin(time.Second).As("time_to_error_ms"))
	g.Expect(env.Recorder().Figures()).To(HaveKey("time_to_error_ms"))

	g.Expect(c.CallTool(ctx, "alpha_echo", nil)).NotTo(BeBackendUnavailable("alpha"))
	own := c.CallTool(ctx, "alpha_fail", nil)
	g.Expect(own).To(HaveOutcome(history.OutcomeToolError))
	g.Expect(own).NotTo(BeBackendUnavailable("alpha"))

	states, err := env.SessionStates(ctx, c.SessionID())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(states).To(HaveBackendState("beta", "error"))
	g.Expect(states).To(HaveBackendState("alpha", "connected"))
}
