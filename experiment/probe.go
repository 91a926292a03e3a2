package experiment

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// prober runs probes through the gateway, recording calls on rec.
type prober struct {
	dep      *Deployment
	rec      *history.Recorder
	headers  map[string]string
	backends []string
	hc       *http.Client
	// gateway is the MCP URL probes dial, and wrap adapts their transport
	// (the API server's credentials) when it is a Service's.
	gateway string
	wrap    func(*http.Transport) http.RoundTripper

	mu     sync.Mutex
	shared *history.Client // the run's shared session, once opened
}

func newProber(dep *Deployment, rec *history.Recorder) *prober {
	p := &prober{dep: dep, rec: rec, hc: &http.Client{Timeout: controlTimeout}}
	if dep.AuthEnv != "" {
		p.headers = map[string]string{"Authorization": "Bearer " + os.Getenv(dep.AuthEnv)}
	}
	for _, b := range dep.Backends {
		p.backends = append(p.backends, b.Name)
	}
	return p
}

// sample is one observation of a probe.
type sample struct {
	ok       bool
	observed string
	took     time.Duration
	calls    []int
}

// run judges a probe within its tolerance and returns its check.
func (p *prober) run(ctx context.Context, pr *Probe, checkName string) history.Check {
	t := pr.Tolerance
	start := time.Now()
	deadline := start.Add(t.Eventually)
	attempts := 0
	for {
		attempts++
		var failed []sample
		var last sample
		var calls []int
		var took time.Duration
		for i := 0; i < t.Samples && ctx.Err() == nil; i++ {
			s := p.once(ctx, pr)
			calls = append(calls, s.calls...)
			took = max(took, s.took)
			last = s
			if !s.ok {
				failed = append(failed, s)
			}
		}
		held := ctx.Err() == nil && len(failed) <= t.MaxFailures
		retry := !held && ctx.Err() == nil && time.Now().Add(t.RetryEvery).Before(deadline)
		if !retry {
			c := history.Check{Name: checkName, Expected: p.expected(pr), At: history.Millis(p.rec.Since()),
				Took: history.Millis(took), Calls: calls, Verdict: history.CheckPassed, Property: pr.JudgedProperty()}
			obs := last.observed
			if len(failed) > 0 {
				obs = failed[len(failed)-1].observed
			}
			if t.Samples > 1 {
				obs = fmt.Sprintf("%d/%d samples deviated; %s", len(failed), t.Samples, obs)
			}
			if attempts > 1 {
				obs += fmt.Sprintf(" (attempt %d, after %s)", attempts, time.Since(start).Round(time.Millisecond))
			}
			c.Observed = obs
			switch {
			case ctx.Err() != nil:
				c.Verdict, c.Reason = history.CheckNotApplicable, "not judged: "+context.Cause(ctx).Error()
			case !held:
				c.Verdict = history.CheckFailed
			}
			return c
		}
		select {
		case <-ctx.Done():
		case <-time.After(t.RetryEvery):
		}
	}
}

// expected says in words what the probe expects.
func (p *prober) expected(pr *Probe) string {
	switch pr.Type {
	case ProbeToolsListed:
		var parts []string
		if len(pr.Tools) > 0 {
			parts = append(parts, "tools/list lists "+strings.Join(pr.Tools, ", "))
		}
		if len(pr.Absent) > 0 {
			parts = append(parts, "tools/list lists nothing matching "+strings.Join(pr.Absent, ", "))
		}
		return strings.Join(parts, "; ")
	case ProbeCallTool:
		x := pr.Expect
		s := fmt.Sprintf("tools/call %s: %s (%s)", pr.Tool, outcomeWords[x.Outcome], x.Outcome)
		if x.Names != "" {
			s += fmt.Sprintf(" naming backend %q", x.Names)
		}
		if x.Within > 0 {
			s += " within " + x.Within.String()
		}
		if x.Contains != "" {
			s += fmt.Sprintf(", text containing %q", x.Contains)
		}
		if x.Lacks != "" {
			s += fmt.Sprintf(", text without %q", x.Lacks)
		}
		return s
	case ProbeHealth:
		var parts []string
		if len(pr.States) > 0 {
			parts = append(parts, "state in ["+strings.Join(pr.States, ", ")+"]")
		}
		if len(pr.Breaker) > 0 {
			parts = append(parts, "breaker in ["+strings.Join(pr.Breaker, ", ")+"]")
		}
		return fmt.Sprintf("health of %s: %s", pr.Backend, strings.Join(parts, ", "))
	}
	return pr.Type
}

// revisionOf is the client revision of a protocol setting: modern, or
// legacy (the default).
func revisionOf(protocol string) history.Revision {
	if protocol == "modern" {
		return history.RevisionModern
	}
	return history.RevisionLegacy
}

// dial opens a fresh client session on the gateway.
func (p *prober) dial(ctx context.Context, timeout time.Duration) (*history.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	opts := []history.ClientOption{history.WithCallTimeout(timeout),
		history.WithHeaders(p.headers), history.WithBackends(p.backends...), history.WithClientName("probe"),
		history.WithCloseGrace(200 * time.Millisecond)}
	if p.wrap != nil {
		opts = append(opts, history.WithTransport(p.wrap))
	}
	return history.Dial(dctx, p.gateway, revisionOf(p.dep.Protocol), p.rec, opts...)
}

// session returns the client a probe uses: a fresh one, or the run's
// shared one (opened at its first use).
func (p *prober) session(ctx context.Context, pr *Probe) (*history.Client, error) {
	if pr.Session != SessionShared {
		return p.dial(ctx, pr.Timeout)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shared == nil {
		c, err := p.dial(ctx, pr.Timeout)
		if err != nil {
			return nil, err
		}
		p.shared = c
	}
	return p.shared, nil
}

// close ends the shared session, if any.
func (p *prober) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shared != nil {
		closeClient(p.shared)
		p.shared = nil
	}
}

func closeClient(c *history.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = c.Close(ctx)
}

// callSeqs returns the Seq of the call events recorded since n events.
func (p *prober) callSeqs(n int) []int {
	var out []int
	for _, ev := range p.rec.Events()[n:] {
		if ev.Kind == history.EventCall {
			out = append(out, ev.Seq)
		}
	}
	return out
}

// once takes one sample of a probe.
func (p *prober) once(ctx context.Context, pr *Probe) sample {
	n := len(p.rec.Events())
	start := time.Now()
	var s sample
	switch pr.Type {
	case ProbeHealth:
		s = p.health(ctx, pr)
	default:
		c, err := p.session(ctx, pr)
		if err != nil {
			s = sample{observed: "could not open a session on the gateway: " + err.Error()}
			break
		}
		if pr.Type == ProbeToolsListed {
			s = p.toolsListed(ctx, c, pr)
		} else {
			s = p.callTool(ctx, c, pr)
		}
		if pr.Session != SessionShared {
			closeClient(c)
		}
	}
	s.took = cmp.Or(s.took, time.Since(start))
	s.calls = p.callSeqs(n)
	return s
}

func (p *prober) toolsListed(ctx context.Context, c *history.Client, pr *Probe) sample {
	call := c.ListTools(ctx)
	if call.Err != nil {
		return sample{observed: "tools/list failed: " + call.Err.Error(), took: call.Took()}
	}
	var names []string
	for _, t := range call.Tools.Tools {
		names = append(names, t.Name)
	}
	matches := func(g string) []string {
		var out []string
		for _, n := range names {
			if ok, _ := path.Match(g, n); ok {
				out = append(out, n)
			}
		}
		return out
	}
	var problems []string
	for _, g := range pr.Tools {
		if len(matches(g)) == 0 {
			problems = append(problems, "nothing matches "+g)
		}
	}
	for _, g := range pr.Absent {
		if m := matches(g); len(m) > 0 {
			problems = append(problems, "listed "+strings.Join(m, ", "))
		}
	}
	return judged(problems, fmt.Sprintf("%d tools: %s", len(names), clip(strings.Join(names, ", "), 200)), call.Took())
}

// judged is a sample observing obs: it holds unless problems say why not.
func judged(problems []string, obs string, took time.Duration) sample {
	if len(problems) > 0 {
		return sample{observed: strings.Join(problems, "; ") + " (" + obs + ")", took: took}
	}
	return sample{ok: true, observed: obs, took: took}
}

func (p *prober) callTool(ctx context.Context, c *history.Client, pr *Probe) sample {
	call := c.CallTool(ctx, pr.Tool, pr.Arguments)
	x := pr.Expect
	took := call.Took()
	got := callOutcome(call)
	text := call.Text()
	what := got
	if got == OutcomeDropped {
		what = "dropped without an answer"
		if cmp.Or(call.Unanswered, history.Unanswered(call.Err)) == "refused" {
			what += " (connection refused)"
		}
	}
	obs := fmt.Sprintf("%s in %s: %s", what, took.Round(10*time.Microsecond), clip(text, 300))
	var problems []string
	if !outcomeMatches(x.Outcome, got) {
		problems = append(problems, fmt.Sprintf("%s instead of %s", outcomeWords[got], outcomeWords[x.Outcome]))
	}
	if x.Within > 0 && took > x.Within {
		problems = append(problems, fmt.Sprintf("took %s, more than %s", took.Round(time.Millisecond), x.Within))
	}
	if x.Names != "" && got == OutcomeError && call.Backend != x.Names && !history.NamesBackend(text, x.Names) {
		problems = append(problems, fmt.Sprintf("the error does not name backend %q", x.Names))
	}
	if x.Contains != "" && !strings.Contains(text, x.Contains) {
		problems = append(problems, fmt.Sprintf("text lacks %q", x.Contains))
	}
	if x.Lacks != "" && strings.Contains(text, x.Lacks) {
		problems = append(problems, fmt.Sprintf("text contains %q", x.Lacks))
	}
	return judged(problems, obs, took)
}

func (p *prober) health(ctx context.Context, pr *Probe) sample {
	states, err := p.readHealth(ctx)
	if err != nil {
		return sample{observed: err.Error()}
	}
	st, ok := states[pr.Backend]
	if !ok {
		return sample{observed: fmt.Sprintf("backend %q not in the health answer (it has %s)", pr.Backend, listOr(states.Names(), "none"))}
	}
	if k := p.dep.Health.StateKey; k != "" {
		st.State = stateOf(st.Raw[k])
	}
	if k := p.dep.Health.BreakerKey; k != "" {
		st.Breaker = stateOf(st.Raw[k])
	}
	accepted := slices.Clone(pr.States)
	if slices.Contains(accepted, "healthy") {
		accepted = append(accepted, p.dep.Health.Healthy...)
	}
	obs := fmt.Sprintf("state %q, breaker %q", st.State, st.Breaker)
	var problems []string
	if len(pr.States) > 0 && !containsFold(accepted, st.State) {
		problems = append(problems, "state not accepted")
	}
	if len(pr.Breaker) > 0 && !containsFold(pr.Breaker, st.Breaker) {
		problems = append(problems, "breaker state not accepted")
	}
	return judged(problems, obs, 0) // once times the health read
}

func (p *prober) readHealth(ctx context.Context) (targets.BackendStates, error) {
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.dep.Health.URL, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range p.headers {
		req.Header.Set(k, v)
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", p.dep.Health.URL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", p.dep.Health.URL, resp.StatusCode)
	}
	return targets.ParseBackendStates(data)
}

// stateOf reads a state: a string, or an object's state/State.
func stateOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		for _, k := range []string{"state", "State", "status", "Status"} {
			if s, ok := x[k].(string); ok {
				return s
			}
		}
	}
	return ""
}

func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(x, s) })
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// outcomeMatches reports whether a call that ended as got meets an
// expected outcome: the same, or any answer (ok or error) for any.
func outcomeMatches(want, got string) bool {
	return got == want || (want == OutcomeAny && (got == OutcomeOK || got == OutcomeError))
}

// callOutcome says who ended a call: the gateway with a result (ok) or an
// error (error), nobody (dropped: the connection ended or could not be
// made without an answer), or the probe's own deadline (timeout).
func callOutcome(call *history.Call) string {
	switch {
	case call.Outcome == history.OutcomeTimeout:
		return OutcomeTimeout
	case call.Err != nil && cmp.Or(call.Unanswered, history.Unanswered(call.Err)) != "": // the wire's fact, else the typed error's
		return OutcomeDropped
	case call.Err != nil || call.IsError:
		return OutcomeError
	}
	return OutcomeOK
}
