package harness

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// Facts are what `chaos profile check --suggest` measured of a gateway:
// what `chaos run` will meet, whatever its profile declares.
type Facts struct {
	// ToolNames is the tool name pattern inferred from where the backends'
	// tools show ("" when none was found); NamedBy says how they were
	// found, e.g. "beta/echo as beta__echo (origin marker)".
	ToolNames, NamedBy string
	// Listed counts the tools the gateway listed.
	Listed int
	// Offered are the method families advertised at initialize; Served
	// those whose calls answered through the gateway.
	Offered, Served []string
	// Transports says, per backend transport, "" when the gateway took a
	// backend on it, else why not.
	Transports map[string]string
	// Revisions says, per client revision, the protocol revision agreed.
	Revisions map[history.Revision]string
	// CallTimeout is the call timeout the config asked for; StallTook how
	// long a call stalled at beta took to answer, StallAnswered whether
	// the gateway answered it before the client gave up.
	CallTimeout, StallTook       time.Duration
	StallAnswered, StallMeasured bool
	// Recovery is how long beta's tools took to come back after a
	// restart (0: not measured).
	Recovery time.Duration
	// Caps are the capabilities whose checks passed when all were asked
	// for.
	Caps targets.Capabilities
	// Timeout counts the checks of the run a gateway without a call
	// timeout fails: set by the caller, which knows the catalogue (chaos
	// profile check counts those of the run the suggested profile
	// selects); nil: not counted.
	Timeout *TimeoutChecks
}

// TimeoutChecks counts the checks of a run that a gateway enforcing no
// call timeout fails (scenarios.CallTimeoutChecks of the scenarios the run
// selects and judges).
type TimeoutChecks struct {
	// Bounded judge a stalled call against the call timeout; Named judge
	// that such a call's error names the backend (a finding files them
	// under "bounded by the call timeout" when only the client's deadline
	// ended the call); Other are the rest (the session's recorded error).
	Bounded, Named, Other int
	// Scenarios counts the scenarios they are in; Unpinned those of the
	// run whose checks no run pinned (the container scenarios).
	Scenarios, Unpinned int
}

// factsTransport is the transport of both backends while the facts other
// than Transports are learnt: every gateway takes streamable HTTP.
var factsTransport = targets.Transports{string(fakebackends.TransportStreamableHTTP)}

// LearnFacts measures the facts of target (an exec target: a profile's),
// whatever its profile declares: it finds how the gateway names tools
// (first start, not waiting on names), runs CheckTarget with every
// capability asked for, its tool names and methods undeclared and both
// backends on streamable HTTP, then starts beta on SSE and on stdio. It
// returns the checks of that run (they judge what was asked, not what the
// profile declares) and the facts.
func LearnFacts(ctx context.Context, target targets.Exec, progress func(string)) ([]ProfileCheck, Facts) {
	say := func(format string, args ...any) {
		if progress != nil {
			progress(fmt.Sprintf(format, args...))
		}
	}
	f := Facts{Transports: map[string]string{}, Revisions: map[history.Revision]string{}}
	probe := target
	probe.ReadyTools, probe.Transports, probe.Methods = false, factsTransport, nil
	say("starting %s to see how it names the backends' tools", target.Name())
	f.ToolNames, f.NamedBy, f.Listed = learnToolNames(ctx, probe)

	all := target
	all.Caps, all.Transports, all.Methods = slices.Clone(targets.AllCapabilities), factsTransport, nil
	if f.ToolNames != "" {
		all.ToolNames = f.ToolNames
	}
	checks := checkTarget(ctx, all, progress, &f)
	for _, c := range targets.AllCapabilities {
		if capPassed(checks, c) {
			f.Caps = append(f.Caps, c)
		}
	}
	for _, tr := range []fakebackends.Transport{fakebackends.TransportSSE, fakebackends.TransportStdio} {
		say("starting %s with beta on %s", target.Name(), tr)
		f.Transports[string(tr)] = tryTransport(ctx, all, tr)
	}
	f.Transports[string(fakebackends.TransportStreamableHTTP)] = ""
	return checks, f
}

// capPassed reports whether the checks confirmed capability c: its own
// check (or, for the breaker, its state check) passed.
func capPassed(checks []ProfileCheck, c targets.Capability) bool {
	name := string(c)
	if c == targets.CapBreaker {
		name += " state"
	}
	return slices.ContainsFunc(checks, func(pc ProfileCheck) bool { return pc.Name == name && pc.Status == history.CheckPassed })
}

// learnToolNames starts target (not waiting for tools by name) and polls
// tools/list for up to its ready timeout until each backend's echo shows,
// by origin marker or by a listed name holding the backend's and the
// tool's names; it returns the pattern those names follow.
func learnToolNames(ctx context.Context, target targets.Exec) (pattern, namedBy string, listed int) {
	env, err := Start(ctx, Topology{Name: "profile-facts-names", Target: target, Backends: checkBackends(targets.DistinctToolNamesOf(target), factsTransport)})
	if err != nil {
		return "", "the gateway did not start: " + err.Error(), 0
	}
	defer env.Close(context.Background())
	deadline := time.Now().Add(cmpDuration(target.ReadyTimeout, runtimes.DefaultStartTimeout))
	for time.Now().Before(deadline) && ctx.Err() == nil {
		c, err := env.Client(ctx, history.RevisionLegacy, history.WithClientName("names"))
		if err == nil {
			call := c.ListTools(ctx)
			_ = c.Close(context.Background())
			if call.Err == nil {
				listed = len(call.Tools.Tools)
				if p, by, ok := inferPattern(call.Tools.Tools, env.info.Backends); ok {
					return p, by, listed
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	return "", fmt.Sprintf("no backend's tools found in tools/list (%d tools listed)", listed), listed
}

func cmpDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// inferPattern finds every backend tool in tools (by origin marker, else
// by a name holding both the backend's and the tool's name) and returns
// the one pattern their names follow.
func inferPattern(tools []mcp.Tool, backends []runtimes.BackendInfo) (string, string, bool) {
	byOrigin := map[string]string{}
	for _, t := range tools {
		if b, n, ok := history.ParseOrigin(t.Description, history.MetaFields(t.Meta)); ok {
			byOrigin[b+"/"+n] = t.Name
		}
	}
	pattern, by := "", ""
	for _, b := range backends {
		for _, tool := range b.Tools {
			exposed, how := byOrigin[b.Name+"/"+tool], "origin marker"
			if exposed == "" {
				how = "name"
				for _, t := range tools {
					if strings.Contains(t.Name, tool) && (strings.Contains(t.Name, b.Name) || t.Name == tool) {
						exposed = t.Name
					}
				}
			}
			if exposed == "" {
				return "", "", false
			}
			p := PatternOf(exposed, b.Name, tool)
			if p == "" || (pattern != "" && p != pattern) {
				return "", "", false
			}
			pattern = p
			if by == "" || b.Name == "beta" {
				by = fmt.Sprintf("%s/%s as %s (%s)", b.Name, tool, exposed, how)
			}
		}
	}
	return pattern, by, pattern != ""
}

// PatternOf is the tool name pattern under which backend's tool is
// exposed as exposed ("{backend}__{tool}", "{tool}"), or "" when exposed
// does not hold tool.
func PatternOf(exposed, backend, tool string) string {
	i := strings.LastIndex(exposed, tool)
	if i < 0 {
		return ""
	}
	before, after := exposed[:i], exposed[i+len(tool):]
	switch {
	case strings.Contains(before, backend):
		before = strings.Replace(before, backend, "{backend}", 1)
	case strings.Contains(after, backend):
		after = strings.Replace(after, backend, "{backend}", 1)
	}
	p := before + "{tool}" + after
	if targets.ValidateToolNamePattern(p) != nil {
		return ""
	}
	return p
}

// tryTransport starts target with beta on tr and calls beta's tool: ""
// when it answered, else why not.
func tryTransport(ctx context.Context, target targets.Exec, tr fakebackends.Transport) string {
	target.Transports = nil
	target.ReadyTimeout = min(cmpDuration(target.ReadyTimeout, runtimes.DefaultStartTimeout), 15*time.Second)
	backends := checkBackends(targets.DistinctToolNamesOf(target), nil)
	backends[1].Script.Transport = tr
	if tr == fakebackends.TransportStdio {
		backends[1].Runtime = runtimes.Process{}
	}
	env, err := Start(ctx, Topology{Name: "profile-facts-" + string(tr), Target: target, Backends: backends})
	if err != nil {
		return gatewaySaid(err.Error())
	}
	defer env.Close(context.Background())
	c, err := env.Client(ctx, history.RevisionLegacy)
	if err != nil {
		return clip(err.Error(), 300)
	}
	call := c.ListTools(ctx)
	if call.Err != nil {
		return clip(call.Err.Error(), 300)
	}
	tool := exposedOf(targets.MatchTools(call.Tools.Tools, env.info.Backends, target.ToolNames), "beta")
	if tool == "" {
		return "beta's tool is not listed"
	}
	if r := c.CallTool(ctx, tool, map[string]any{"msg": "transport"}); r.Outcome != history.OutcomeOK {
		return fmt.Sprintf("%s: %s: %s", tool, r.Outcome, clip(r.Text(), 200))
	}
	return ""
}

// gatewaySaid is the gateway's own words in a start error (its output,
// quoted after "stderr: "), else the error, on one line, clipped.
func gatewaySaid(s string) string {
	if _, out, ok := strings.Cut(s, "stderr: "); ok {
		s, _, _ = strings.Cut(out, " (the whole output")
		s = "the gateway said: " + s
	}
	return clip(strings.Join(strings.Fields(s), " "), 300)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// learnSession records, on env's running gateway, the protocol revision
// agreed with each client revision and whether a call stalled at beta is
// answered within the config's call timeout.
func (f *Facts) learnSession(ctx context.Context, env *Env, betaTool string) {
	for _, rev := range history.Revisions {
		c, err := env.Client(ctx, rev, history.WithClientName("revision-"+string(rev)))
		if err != nil {
			f.Revisions[rev] = "refused: " + clip(err.Error(), 200)
			continue
		}
		f.Revisions[rev] = c.ProtocolVersion()
		_ = c.Close(context.Background())
	}
	if betaTool == "" {
		return
	}
	f.CallTimeout = env.GatewayCallTimeout()
	stall := faults.Fault{Kind: faults.KindStall, Match: faults.Match{Method: "tools/call"}, Params: &faults.Stall{Stage: faults.StageBeforeHeaders}}
	c, err := env.Client(ctx, history.RevisionLegacy, history.WithClientName("stall"), history.WithCallTimeout(f.CallTimeout+5*time.Second))
	if err != nil {
		return
	}
	if err := env.SetFaults(ctx, "beta", stall); err == nil {
		r := c.CallTool(ctx, betaTool, map[string]any{"msg": "stall"})
		f.StallMeasured, f.StallTook = true, r.Took()
		f.StallAnswered = r.Outcome != history.OutcomeTimeout && r.Outcome != history.OutcomeOK
	}
	// The stall ends first, so closing the session waits on nothing.
	_ = env.ClearFaults(context.Background(), "beta")
	_ = c.Close(context.Background())
}

// record notes the families advertised and served (tools when a backend
// tool was found; resources and prompts when their check passed).
func (f *Facts) record(c *history.Client, offered []ProfileCheck, matches []targets.ToolMatch) {
	for _, family := range targets.MethodFamilies {
		if c.Offers(family + "/") {
			f.Offered = append(f.Offered, family)
		}
	}
	if exposedOf(matches, "beta") != "" || exposedOf(matches, "alpha") != "" {
		f.Served = append(f.Served, "tools")
	}
	for _, pc := range offered {
		if (pc.Name == "resources" || pc.Name == "prompts") && pc.Status == history.CheckPassed {
			f.Served = append(f.Served, pc.Name)
		}
	}
}
