package kit

import (
	"context"
	"slices"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// Kit binds a scenario's context, started topology and Gomega. Use it
// from the goroutine running the scenario body only.
type Kit struct {
	// Ctx is the scenario's context (its timeout).
	Ctx context.Context
	// Env is the started topology.
	Env *harness.Env
	// G is the scenario's Gomega: a failed assertion ends the scenario.
	G gomega.Gomega

	names *Names
	// unsteady, when set, says why the gateway is not in steady state
	// (Steady, CheckRecovery): checks are inconclusive until it is.
	unsteady string
	// premise, when set, says why the state the checks being recorded
	// depend on was not shown (Given): they are inconclusive.
	premise string
	// lastStep names the fault step Steady last began.
	lastStep string
	// stalls, when watched (WithStalls, WatchStalls), are this process's
	// stalls (Net, StalledOver, LateThrough).
	stalls *Stalls
	// lastClear is when ClearFaults last began: the end of the fault
	// CheckRecovery judges the recovery from.
	lastClear time.Time
	// gaveUp is set once no session reached steady state.
	gaveUp bool
	// property, when set, is the property the checks being recorded
	// judge (declare).
	property history.Property
	// openedWith holds, for a call that was the first of a client session
	// OpeningCall opened, when that opening began (InitializeActed).
	openedWith map[*history.Call]time.Time
}

// New makes the kit of a scenario body.
func New(ctx context.Context, env *harness.Env, g gomega.Gomega) *Kit {
	return &Kit{Ctx: ctx, Env: env, G: g, lastStep: "the start", stalls: stallsOf(ctx)}
}

// Recorder is the scenario's recorder.
func (k *Kit) Recorder() *history.Recorder { return k.Env.Recorder() }

// Client connects a client on rev, ending the scenario when it cannot.
// The first client also discovers the gateway's names for the backends'
// tools, resources and prompts (see Names).
func (k *Kit) Client(rev history.Revision, opts ...history.ClientOption) *history.Client {
	c, err := k.Env.Client(k.Ctx, rev, opts...)
	k.G.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "connect a %s client", rev)
	if k.names == nil {
		k.names = Discover(k.Ctx, c, k.Env)
	}
	return c
}

// Names returns the discovered names, discovering them with a client of
// its own when no client has been made yet.
func (k *Kit) Names() *Names {
	if k.names == nil {
		c, err := k.Env.Client(k.Ctx, history.RevisionModern, history.WithClientName("discover"))
		k.G.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "connect a client to discover the gateway's tool names")
		k.names = Discover(k.Ctx, c, k.Env)
		_ = c.Close(k.Ctx)
	}
	return k.names
}

// Tool is the name under which the gateway exposes backend's tool.
func (k *Kit) Tool(backend, tool string) string { return k.Names().Tool(backend, tool) }

// Prompt is the name under which the gateway exposes backend's prompt.
func (k *Kit) Prompt(backend, prompt string) string { return k.Names().Prompt(backend, prompt) }

// Resource is the URI under which the gateway exposes backend's resource
// (named by its fixture URI, e.g. Readme(Beta)).
func (k *Kit) Resource(backend, uri string) string { return k.Names().Resource(backend, uri) }

// Must ends the scenario when err, the harness's own action's, is not
// nil (for setup the rest of the scenario cannot do without: setting a
// fault, reading a request log): inconclusive, no verdict on the gateway
// (HarnessMust).
func (k *Kit) Must(err error, what string, args ...any) {
	k.HarnessMust(err, what, args...)
}

// SetFaults replaces backend's faults, ending the scenario inconclusive
// when the harness cannot (HarnessMust).
func (k *Kit) SetFaults(backend string, faults ...faults.Fault) {
	k.HarnessMust(k.Env.SetFaults(k.Ctx, backend, faults...), "set faults on %s", backend)
}

// ClearFaults removes backend's faults, ending the scenario inconclusive
// when the harness cannot (HarnessMust).
func (k *Kit) ClearFaults(backend string) {
	k.lastClear = time.Now()
	k.HarnessMust(k.Env.ClearFaults(k.Ctx, backend), "clear the faults of %s", backend)
}

// OnCall limits a fault to tools/call requests.
func OnCall(f faults.Fault) faults.Fault {
	f.Match = faults.Match{Method: "tools/call"}
	return f
}

// OnTool limits a fault to tools/call requests of backend's tool (named
// as the fixture names it: FixtureName).
func (k *Kit) OnTool(backend, tool string, f faults.Fault) faults.Fault {
	f.Match = faults.Match{Method: "tools/call", Tool: k.FixtureName(backend, tool)}
	return f
}

// FixtureName is the name backend's fixture gives its tool or prompt for
// this target (see FixtureName): what its request log and fault matches
// call it.
func (k *Kit) FixtureName(backend, name string) string {
	return FixtureName(targets.DistinctToolNamesOf(k.Env.Target()), backend, name)
}

// Figure sets a key figure of the scenario's results.
func (k *Kit) Figure(name string, v float64) { k.Recorder().SetFigure(name, v) }

// TimeToError records figure name (ms; the largest recorded) only when
// call failed: a time to error is never a success's latency.
func (k *Kit) TimeToError(name string, call *history.Call, d time.Duration) {
	if call != nil && call.Outcome != history.OutcomeOK {
		k.Recorder().MaxFigure(name, Ms(d))
	}
}

// Note records free text on the timeline.
func (k *Kit) Note(format string, args ...any) { k.Env.Note(format, args...) }

// Has reports whether the target declares capability c.
func (k *Kit) Has(c targets.Capability) bool { return k.Env.Capabilities().Has(c) }

// Ms converts a duration to float milliseconds for figures.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Sleep waits d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) { _ = faults.SleepCtx(ctx, nil, d) }

// Until polls cond every 10 ms until it holds, d passes or ctx ends, and
// reports whether it held (harness.Until): the caller judges the outcome.
func Until(ctx context.Context, d time.Duration, cond func() bool) bool {
	return harness.Until(ctx, d, 10*time.Millisecond, cond)
}

// Await waits for a value from ch for at most d; ok is false when none
// came.
func Await[T any](ctx context.Context, ch <-chan T, d time.Duration) (v T, ok bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case v = <-ch:
		return v, true
	case <-t.C:
	case <-ctx.Done():
	}
	return v, false
}

// CountRequests counts the backend's logged requests of a JSON-RPC method.
func (k *Kit) CountRequests(backend, method string) (int, error) {
	reqs, err := k.Env.Backend(backend).Requests(k.Ctx) // a copy of the log
	return len(slices.DeleteFunc(reqs, func(r fakebackends.RequestRecord) bool { return r.Method != method })), err
}
