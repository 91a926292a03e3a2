package harness

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// ProfileCheck is one finding of CheckTarget.
type ProfileCheck struct {
	// Name is what was checked, e.g. "tools found" or "health-api".
	Name string
	// Status is passed, failed or not_applicable (not checkable here).
	Status history.CheckVerdict
	// Detail is the evidence: what was seen, or why it was not checked.
	Detail string
}

// checkBackends is the topology CheckTarget starts: two in-process fake
// backends on both HTTP transports, each with an echo tool carrying its
// origin marker. When the target's tool names carry no backend, or it
// wants backend-distinct names (DistinctToolNamesOf), the tool names
// differ per backend (as the scenarios' do).
func checkBackends(distinct bool, takes targets.Transports) []BackendSpec {
	betaTransport := fakebackends.TransportSSE
	if takes.Lacks(string(betaTransport)) != "" {
		betaTransport = fakebackends.TransportStreamableHTTP
	}
	var out []BackendSpec
	for _, b := range []struct {
		name string
		tr   fakebackends.Transport
	}{{"alpha", fakebackends.TransportStreamableHTTP}, {"beta", betaTransport}} {
		tool := "echo"
		if distinct {
			tool = b.name + "_echo"
		}
		prompt, uri := b.name+"_greet", "mem://"+b.name+"/readme"
		out = append(out, BackendSpec{Script: &fakebackends.Script{Name: b.name, Transport: b.tr, Protocol: fakebackends.ProtocolAuto,
			Tools: []fakebackends.ToolSpec{{Name: tool, Description: "Echo of " + b.name + " " + history.OriginMarker(b.name, tool)}},
			Prompts: []fakebackends.PromptSpec{{Name: prompt, Text: "Hello from " + b.name,
				Description: "A greeting from " + b.name + " " + history.OriginMarker(b.name, prompt), Meta: map[string]any{history.OriginMetaKey: b.name + "/" + prompt}}},
			Resources: []fakebackends.ResourceSpec{{URI: uri, Name: "readme", Text: "hello from " + b.name,
				Description: "The readme of " + b.name + " " + history.OriginMarker(b.name, uri), Meta: map[string]any{history.OriginMetaKey: b.name + "/" + uri}}},
		}})
	}
	return out
}

// CheckTarget starts the target once in front of two fake backends (with
// the health monitor, breaker, keepalive and metrics on as far as it
// declares them) and reports what works: start and readiness, every
// backend's tools found and callable, and each declared capability that
// can be confirmed without faults (health and session APIs read, breaker
// state reported, metrics served, keepalive probes seen; the optimizer in
// a second start). progress, when set, gets a line per step.
func CheckTarget(ctx context.Context, target targets.Target, progress func(string)) []ProfileCheck {
	return checkTarget(ctx, target, progress, nil)
}

// checkTarget is CheckTarget, recording in facts (when not nil) what it
// saw: the families served, the revisions agreed, a stalled call's
// answer, the recovery after a restart.
func checkTarget(ctx context.Context, target targets.Target, progress func(string), facts *Facts) []ProfileCheck {
	say := func(format string, args ...any) {
		if progress != nil {
			progress(fmt.Sprintf(format, args...))
		}
	}
	caps := target.Capabilities()
	pattern := ""
	if e, ok := target.(targets.Exec); ok {
		pattern = e.ToolNames
	}
	var out []ProfileCheck
	add := func(name string, status history.CheckVerdict, format string, args ...any) {
		out = append(out, ProfileCheck{Name: name, Status: status, Detail: fmt.Sprintf(format, args...)})
	}
	feats := runtimes.Features{Metrics: caps.Has(targets.CapMetrics)}
	if caps.Has(targets.CapHealthAPI) || caps.Has(targets.CapBreaker) {
		// Probes that leave a loaded machine room: with 200 ms (a 100 ms
		// timeout) a gateway under two -race suites found beta unhealthy,
		// opened its circuit, and the check failed beta's call.
		feats.Health = &runtimes.HealthFeature{Interval: time.Second, Timeout: 500 * time.Millisecond, UnhealthyThreshold: 3}
	}
	if caps.Has(targets.CapBreaker) {
		feats.Breaker = &runtimes.BreakerFeature{FailureThreshold: 3, OpenTimeout: 2 * time.Second}
	}
	if caps.Has(targets.CapKeepalive) {
		feats.Keepalive = map[string]runtimes.KeepaliveFeature{"beta": {Method: "ping", Interval: 200 * time.Millisecond}}
	}
	backends := checkBackends(targets.DistinctToolNamesOf(target), targets.TransportsOf(target))
	say("starting %s in front of fake backends alpha (streamable-http) and beta (%s)", target.Name(), backends[1].Script.Transport)
	start := time.Now()
	env, err := Start(ctx, Topology{Name: "profile-check", Target: target, Backends: backends, Features: feats})
	if err != nil {
		add("start", history.CheckFailed, "%v", err)
		return out
	}
	defer env.Close(context.Background())
	add("start", history.CheckPassed, "ready in %s at %s", time.Since(start).Round(time.Millisecond), env.Gateway().MCPURL())

	c, err := env.Client(ctx, history.RevisionLegacy)
	if err != nil {
		add("tools found", history.CheckFailed, "connect: %v", err)
		return out
	}
	call := c.ListTools(ctx)
	if call.Err != nil {
		add("tools found", history.CheckFailed, "tools/list: %v", call.Err)
		return out
	}
	matches := targets.MatchTools(call.Tools.Tools, env.info.Backends, pattern)
	var found []string
	for _, m := range matches {
		if m.Exposed != "" {
			found = append(found, fmt.Sprintf("%s/%s as %s (by %s)", m.Backend, m.Tool, m.Exposed, m.By))
		}
	}
	if missing := targets.MissingTools(matches); len(missing) > 0 {
		add("tools found", history.CheckFailed, "%s; not found: %s (pattern %q)%s; found: %s", targets.Seen(call.Tools.Tools, matches),
			strings.Join(missing, ", "), cmp.Or(pattern, targets.DefaultToolNamePattern), targets.Collisions(missing, env.info.Backends), strings.Join(found, "; "))
	} else {
		add("tools found", history.CheckPassed, "%s", strings.Join(found, "; "))
	}
	for _, m := range matches {
		if m.Exposed == "" {
			continue
		}
		r := c.CallTool(ctx, m.Exposed, map[string]any{"msg": "profile check"})
		if r.Outcome != history.OutcomeOK {
			add("call "+m.Exposed, history.CheckFailed, "%s after %s: %s", r.Outcome, r.Took(), r.Text())
		} else {
			add("call "+m.Exposed, history.CheckPassed, "answered in %s", r.Took().Round(time.Millisecond))
		}
	}
	offered := checkOffered(ctx, c, targets.MethodsOf(target))
	out = append(out, offered...)
	if facts != nil {
		facts.record(c, offered, matches)
	}

	apis := targets.TargetAdminAPIs(target)
	if caps.Has(targets.CapHealthAPI) || caps.Has(targets.CapBreaker) {
		// Read even when only the breaker is declared (its state is read
		// from the health API).
		u, _ := apis.Health.URL(env.Gateway().BaseURL(), targets.HealthPath, "")
		st, err := env.readStates(ctx, "health", apis.Health, targets.HealthPath, "")
		switch {
		case err != nil:
			add("health-api", history.CheckFailed, "%v", err)
		default:
			add(string(targets.CapHealthAPI), statesStatus(st, env, false), "GET %s: %s", u, targets.Summarize(st))
			if caps.Has(targets.CapBreaker) {
				add(string(targets.CapBreaker)+" state", statesStatus(st, env, true), "circuit per backend: %s (opening on failed calls is judged by the breaker scenarios)", targets.Summarize(st))
			}
		}
	}
	if caps.Has(targets.CapSessionAPI) {
		u, _ := apis.Session.URL(env.Gateway().BaseURL(), targets.DefaultSessionPath, c.SessionID())
		st, err := env.SessionStates(ctx, c.SessionID())
		if err != nil {
			add(string(targets.CapSessionAPI), history.CheckFailed, "GET %s: %v", u, err)
		} else {
			add(string(targets.CapSessionAPI), statesStatus(st, env, false), "GET %s: %s", u, targets.Summarize(st))
		}
	}
	if caps.Has(targets.CapMetrics) {
		data, err := targets.GetJSON(ctx, targets.AdminHTTP, env.Gateway().BaseURL()+"/metrics", targets.HeadersOf(target).Metrics)
		switch {
		case err != nil:
			add(string(targets.CapMetrics), history.CheckFailed, "%v", err)
		case !strings.Contains(string(data), "# TYPE"):
			add(string(targets.CapMetrics), history.CheckFailed, "GET /metrics: no Prometheus text (%d bytes)", len(data))
		default:
			add(string(targets.CapMetrics), history.CheckPassed, "GET /metrics: %d lines of Prometheus text", strings.Count(string(data), "\n"))
		}
	}
	if caps.Has(targets.CapKeepalive) {
		var n int
		verdict, within := history.CheckPassed, ""
		if !Until(ctx, 5*time.Second, 50*time.Millisecond, func() bool {
			reqs, err := env.Backend("beta").Requests(ctx)
			n = len(slices.DeleteFunc(reqs, func(r fakebackends.RequestRecord) bool { return r.Method != "ping" }))
			return err == nil && n >= 2
		}) {
			verdict, within = history.CheckFailed, " within 5s"
		}
		add(string(targets.CapKeepalive), verdict, "beta got %d pings%s (keepalive ping every 200ms asked)", n, within)
	}
	if caps.Has(targets.CapReinitOn404) {
		add(string(targets.CapReinitOn404), history.CheckNotApplicable, "needs a backend restart: judged by the restart scenarios")
	}
	if tool := exposedOf(matches, "beta"); tool != "" {
		if facts != nil {
			say("asking %s with each client revision, and stalling a call at beta", target.Name())
			facts.learnSession(ctx, env, tool)
		}
		say("restarting beta to measure how long %s takes to serve it again", target.Name())
		check, took := measureRecovery(ctx, env, c, "beta", tool)
		out = append(out, check)
		if facts != nil && check.Status != history.CheckNotApplicable {
			facts.Recovery = took
		}
	} else {
		add(RecoveryCheck, history.CheckNotApplicable, "no tool of beta was found to call after a restart")
	}
	_ = env.Close(ctx)
	if caps.Has(targets.CapOptimizer) {
		say("starting %s again with the optimizer on", target.Name())
		out = append(out, checkOptimizer(ctx, target, pattern))
	}
	return out
}

// exposedOf is the gateway's name of backend's first tool found ("":
// none).
func exposedOf(ms []targets.ToolMatch, backend string) string {
	for _, m := range ms {
		if m.Backend == backend && m.Exposed != "" {
			return m.Exposed
		}
	}
	return ""
}

// statesStatus is ok when every backend of env has a state (a breaker
// state when breaker).
func statesStatus(st targets.BackendStates, env *Env, breaker bool) history.CheckVerdict {
	for _, b := range env.Backends() {
		s, ok := st[b.Name()]
		if !ok || (!breaker && s.State == "") || (breaker && s.Breaker == "") {
			return history.CheckFailed
		}
	}
	return history.CheckPassed
}

func checkOptimizer(ctx context.Context, target targets.Target, pattern string) ProfileCheck {
	name := string(targets.CapOptimizer)
	env, err := Start(ctx, Topology{Name: "profile-check-optimizer", Target: target, Backends: checkBackends(targets.DistinctToolNamesOf(target), targets.TransportsOf(target)), Features: runtimes.Features{Optimizer: true}})
	if err != nil {
		return ProfileCheck{name, history.CheckFailed, fmt.Sprintf("start with the optimizer: %v", err)}
	}
	defer env.Close(context.Background())
	c, err := env.Client(ctx, history.RevisionLegacy)
	if err != nil {
		return ProfileCheck{name, history.CheckFailed, err.Error()}
	}
	names, err := c.ToolNames(ctx)
	if err != nil {
		return ProfileCheck{name, history.CheckFailed, err.Error()}
	}
	if !slices.Contains(names, "find_tool") || !slices.Contains(names, "call_tool") {
		return ProfileCheck{name, history.CheckFailed, fmt.Sprintf("tools/list with the optimizer on shows %v, want find_tool and call_tool", names)}
	}
	return ProfileCheck{name, history.CheckPassed, fmt.Sprintf("tools/list with the optimizer on: %v", names)}
}

// checkOffered reports what the gateway advertised at initialize and
// exercises resources and prompts when it offers them (listing each
// backend's, and reading or getting one found by its origin marker). A
// family the profile's methods leave out, or the gateway does not
// advertise, is not applicable: the scenarios will not judge it.
func checkOffered(ctx context.Context, c *history.Client, declared targets.Methods) []ProfileCheck {
	var offered []string
	for _, f := range targets.MethodFamilies {
		if c.Offers(f + "/") {
			offered = append(offered, f)
		}
	}
	out := []ProfileCheck{{Name: "advertised", Status: history.CheckPassed, Detail: fmt.Sprintf("at initialize the gateway offers %s", strings.Join(offered, ", "))}}
	if len(declared) > 0 {
		out[0].Detail += fmt.Sprintf("; the profile's methods: %s", strings.Join(declared, ", "))
	}
	for _, family := range []string{"resources", "prompts"} {
		if why := declared.Lacks(family + "/"); why != "" {
			out = append(out, ProfileCheck{Name: family, Status: history.CheckNotApplicable, Detail: why})
			continue
		}
		if !slices.Contains(offered, family) {
			out = append(out, ProfileCheck{Name: family, Status: history.CheckNotApplicable, Detail: "the gateway does not advertise " + family + ": its " + family + " checks are not applicable"})
			continue
		}
		out = append(out, exerciseFamily(ctx, c, family))
	}
	return out
}

// exerciseFamily lists a family's entries, finds beta's by origin marker
// and reads (gets) it.
func exerciseFamily(ctx context.Context, c *history.Client, family string) ProfileCheck {
	fail := func(format string, args ...any) ProfileCheck {
		return ProfileCheck{Name: family, Status: history.CheckFailed, Detail: fmt.Sprintf(format, args...)}
	}
	var exposed string
	var use func() *history.Call
	if family == "resources" {
		list := c.ListResources(ctx)
		if list.Err != nil {
			return fail("resources/list: %v", list.Err)
		}
		for _, r := range list.Resources.Resources {
			if b, _, ok := history.ParseOrigin(r.Description, history.MetaFields(r.Meta)); ok && b == "beta" {
				exposed = r.URI
			}
		}
		use = func() *history.Call { return c.ReadResource(ctx, exposed) }
	} else {
		list := c.ListPrompts(ctx)
		if list.Err != nil {
			return fail("prompts/list: %v", list.Err)
		}
		for _, p := range list.Prompts.Prompts {
			if b, _, ok := history.ParseOrigin(p.Description, history.MetaFields(p.Meta)); ok && b == "beta" {
				exposed = p.Name
			}
		}
		use = func() *history.Call { return c.GetPrompt(ctx, exposed, nil) }
	}
	if exposed == "" {
		return fail("no %s of beta found by origin marker in the list: the gateway drops descriptions and _meta, or does not aggregate its backends' %s", family, family)
	}
	r := use()
	if r.Outcome != history.OutcomeOK {
		return fail("%s %s: %s after %s: %s", r.Method, exposed, r.Outcome, r.Took(), r.Text())
	}
	return ProfileCheck{Name: family, Status: history.CheckPassed, Detail: fmt.Sprintf("beta's found as %q and answered in %s", exposed, r.Took().Round(time.Millisecond))}
}

// CheckFeatureSets starts the target once for each feature set (the
// distinct sets the scenario catalogue renders into its config:
// scenarios.FeatureSets), in front of the same fake backends as
// CheckTarget, and reports, per set, whether the gateway started and was
// ready with that config, or the gateway's own error when it refused it:
// a config it rejects is caught here, not in the middle of a run.
func CheckFeatureSets(ctx context.Context, target targets.Target, sets []runtimes.FeatureSet, progress func(string)) []ProfileCheck {
	var out []ProfileCheck
	for _, set := range sets {
		if progress != nil {
			progress(fmt.Sprintf("starting %s with the config of %s (%s)", target.Name(), strings.Join(set.Scenarios, ", "), set.Name))
		}
		name := "config: " + set.Name
		start := time.Now()
		env, err := Start(ctx, Topology{Name: "profile-check-features", Target: target, Backends: checkBackends(targets.DistinctToolNamesOf(target), targets.TransportsOf(target)), Features: set.Features})
		if err != nil {
			out = append(out, ProfileCheck{name, history.CheckFailed, fmt.Sprintf("the gateway refused the config rendered for %s: %v", strings.Join(set.Scenarios, ", "), err)})
			continue
		}
		out = append(out, ProfileCheck{name, history.CheckPassed, fmt.Sprintf("started and ready in %s (the config of %s)", time.Since(start).Round(time.Millisecond), strings.Join(set.Scenarios, ", "))})
		_ = env.Close(ctx)
	}
	return out
}
