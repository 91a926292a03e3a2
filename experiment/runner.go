package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"go.yaml.in/yaml/v3"
)

// Status is how a run ended.
type Status string

// Statuses, and the exit codes of `chaos experiment run`.
const (
	// StatusHeld: the hypothesis held before and after the method and
	// every method probe held (exit 0). A dry run whose endpoints all
	// answered ends so too.
	StatusHeld Status = "held"
	// StatusDeviated: a probe deviated beyond its tolerance (exit 1); the
	// rest of the method was skipped and the faults rolled back.
	StatusDeviated Status = "deviated"
	// StatusAborted: the run could not reach a verdict: an endpoint did
	// not answer before any fault, a fault could not be set, a lease was
	// lost, or safeguards.maxDuration ran out (exit 3).
	StatusAborted Status = "aborted"
	// StatusInterrupted: SIGINT or SIGTERM; rolled back first (exit 130).
	StatusInterrupted Status = "interrupted"
)

// Exit codes.
const (
	ExitHeld        = 0
	ExitDeviated    = 1
	ExitBadInput    = 2
	ExitAborted     = 3
	ExitInterrupted = 130
)

// Options configure a run.
type Options struct {
	// DryRun prints the plan and checks every endpoint without setting a
	// fault.
	DryRun bool
	// Progress receives one line per step (nil: none).
	Progress io.Writer
	// Kube acts on the cluster of chaos_mesh actions (nil: the method
	// has none).
	Kube KubeObjects
	// Services acts on the Services deployment.kube names: the
	// gateway's and backends' (nil: the deployment names none).
	Services KubeServices
}

// Outcome is the end of a run.
type Outcome struct {
	Status Status
	// Reason explains a deviation or an abort.
	Reason string
	// RollbackFailed is set when a backend could not be verified clean;
	// RollbackErrors say which and how to clear them by hand.
	RollbackFailed bool
	RollbackErrors []string
	// Results is the journal (one scenario: the experiment).
	Results *history.Results
}

// ExitCode maps the outcome to the command's exit code: a failed rollback
// is 3 whatever else happened.
func (o *Outcome) ExitCode() int {
	if o.RollbackFailed {
		return ExitAborted
	}
	switch o.Status {
	case StatusHeld:
		return ExitHeld
	case StatusDeviated:
		return ExitDeviated
	case StatusInterrupted:
		return ExitInterrupted
	}
	return ExitAborted
}

var errMaxDuration = errors.New("safeguards.maxDuration ran out")

// runner is one run's state.
type runner struct {
	e        *Experiment
	opts     Options
	rec      *history.Recorder
	probes   *prober
	controls map[string]*control
	checks   []history.Check
	started  time.Time

	outMu sync.Mutex // progress lines come from timers too

	mu      sync.Mutex
	dirty   map[string]bool               // backends a fault was set on
	created []string                      // chaos_mesh objects created (or asked for), as KubeObjects refs
	holds   map[string]context.CancelFunc // backends named by Service whose injection's Lease is renewed
	leasing map[string]bool               // backends whose control API holds leases
	lost    chan error                    // a lease was lost: abort
	timers  []*time.Timer
}

// Run runs the experiment: preflight (every endpoint answers, no fault is
// already set), the hypothesis, the method, the hypothesis again, and
// always the rollback (clear every backend and verify it clean). ctx is
// the interrupt: when it ends, the run rolls back and reports
// StatusInterrupted.
func Run(ctx context.Context, e *Experiment, opts Options) *Outcome {
	r := &runner{e: e, opts: opts, rec: history.NewRecorder(e.Title, "experiment"), controls: map[string]*control{},
		dirty: map[string]bool{}, leasing: map[string]bool{}, holds: map[string]context.CancelFunc{}, lost: make(chan error, 1), started: time.Now()}
	r.probes = newProber(&e.Deployment, r.rec)
	for _, b := range e.Deployment.Backends {
		if b.Control != "" {
			r.controls[b.Name] = newControl(b)
		}
	}
	if err := r.resolveGateway(); err != nil {
		out := &Outcome{Status: StatusAborted, Reason: "before any fault: " + err.Error()}
		r.check(r.errCheck("preflight: gateway", "the gateway's Service is reachable through the API server", "", err, r.started))
		out.Results = r.journal(out)
		r.progress("%s: %s", strings.ToUpper(string(out.Status)), out.Reason)
		return out
	}
	runCtx, cancel := context.WithTimeoutCause(ctx, e.Safeguards.MaxDuration, errMaxDuration)
	defer cancel()
	r.progress("experiment %q against %s", e.Title, r.probes.gateway)
	if opts.DryRun {
		r.printPlan()
	}
	out := &Outcome{}
	out.Status, out.Reason = r.phases(runCtx)
	r.probes.close()
	if ctx.Err() != nil {
		out.Status, out.Reason = StatusInterrupted, "interrupted ("+context.Cause(ctx).Error()+"): rolled back"
	} else if errors.Is(context.Cause(runCtx), errMaxDuration) {
		out.Status, out.Reason = StatusAborted, fmt.Sprintf("safeguards.maxDuration %s ran out", e.Safeguards.MaxDuration)
	}
	if !opts.DryRun {
		out.RollbackErrors = r.rollback()
		out.RollbackFailed = len(out.RollbackErrors) > 0
	}
	out.Results = r.journal(out)
	r.progress("%s%s", strings.ToUpper(string(out.Status)), prefixed(": ", out.Reason))
	return out
}

func prefixed(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

// phases runs everything before the rollback.
func (r *runner) phases(ctx context.Context) (Status, string) {
	if reason := r.preflight(ctx); reason != "" {
		return StatusAborted, reason
	}
	if r.opts.DryRun {
		r.progress("dry run: every endpoint answered; no fault was set")
		return StatusHeld, "dry run: plan printed, endpoints checked, nothing applied"
	}
	if reason := r.hypothesis(ctx, "steady-state before"); reason != "" {
		return StatusDeviated, reason
	}
	if st, reason := r.method(ctx); st != StatusHeld {
		return st, reason
	}
	if reason := r.hypothesis(ctx, "steady-state after"); reason != "" {
		return StatusDeviated, reason
	}
	return StatusHeld, ""
}

func (r *runner) progress(format string, args ...any) {
	if r.opts.Progress == nil {
		return
	}
	r.outMu.Lock()
	defer r.outMu.Unlock()
	fmt.Fprintf(r.opts.Progress, "[%7.2fs] %s\n", time.Since(r.started).Seconds(), fmt.Sprintf(format, args...))
}

// check records a check and prints it.
func (r *runner) check(c history.Check) bool {
	r.checks = append(r.checks, c)
	mark := "ok"
	switch c.Verdict {
	case history.CheckFailed:
		mark = "DEVIATED"
	case history.CheckNotApplicable:
		mark = "not judged"
	}
	r.progress("%s: %s (%s)", c.Name, mark, clip(c.Observed, 240))
	return c.Verdict == history.CheckPassed
}

// hypothesis runs the steady-state probes; it returns why it did not
// hold, or "".
func (r *runner) hypothesis(ctx context.Context, phase string) string {
	for i := range r.e.SteadyState.Probes {
		p := &r.e.SteadyState.Probes[i]
		if ctx.Err() != nil {
			return "not judged: " + context.Cause(ctx).Error()
		}
		name := phase + ": " + p.Name
		if c := r.probes.run(ctx, p, name); !r.check(c) {
			return deviation(c)
		}
	}
	return ""
}

// method runs the method's steps; a probe that deviates ends it.
func (r *runner) method(ctx context.Context) (Status, string) {
	for i := range r.e.Method {
		s := &r.e.Method[i]
		select {
		case err := <-r.lost:
			return StatusAborted, err.Error()
		default:
		}
		if ctx.Err() != nil {
			return StatusAborted, context.Cause(ctx).Error()
		}
		switch {
		case s.Pause > 0:
			r.progress("method[%d]: pause %s", i, s.Pause)
			select {
			case <-ctx.Done():
				return StatusAborted, context.Cause(ctx).Error()
			case err := <-r.lost:
				return StatusAborted, err.Error()
			case <-time.After(s.Pause):
			}
		case s.Probe != nil:
			name := fmt.Sprintf("method[%d]: %s", i, s.Probe.Name)
			if c := r.probes.run(ctx, s.Probe, name); !r.check(c) {
				return StatusDeviated, deviation(c)
			}
		case s.Action != nil:
			if err := r.act(ctx, i, s.Action); err != nil {
				return StatusAborted, err.Error()
			}
		}
	}
	return StatusHeld, ""
}

// act carries out one action.
func (r *runner) act(ctx context.Context, i int, a *Action) error {
	if a.Type == ActionChaosMesh {
		return r.createObject(ctx, i, a)
	}
	if svc, ok := r.kubeBackend(a.Backend); ok && a.Type == ActionInject {
		return r.injectService(ctx, i, a, svc)
	}
	if a.Type == ActionClear {
		var errs []error
		for _, b := range r.e.Deployment.Backends {
			if a.Backend != "*" && b.Name != a.Backend {
				continue
			}
			if b.Service != "" {
				err := r.healService(ctx, b.Name, b.Service)
				r.progress("method[%d]: clear %s (heal Service %s)%s", i, b.Name, b.Service, errSuffix(err))
				errs = append(errs, err)
				continue
			}
			start := time.Now() // each backend's clear is timed on its own
			err := r.controls[b.Name].clear(ctx)
			r.recordFault(b.Name, "clear", nil, err, start)
			r.progress("method[%d]: clear %s%s", i, b.Name, errSuffix(err))
			errs = append(errs, err)
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("method[%d]: clear: %w", i, err)
		}
		return nil
	}
	start := time.Now()
	c := r.controls[a.Backend]
	r.mu.Lock()
	r.dirty[a.Backend] = true // before the request: a timeout may still have set it
	r.mu.Unlock()
	leased, err := c.inject(ctx, a.Faults, r.e.Safeguards.LeaseTTL)
	r.recordFault(a.Backend, "inject", a.Faults, err, start)
	lease := fmt.Sprintf("lease %s, renewed every %s", r.e.Safeguards.LeaseTTL, r.e.Safeguards.LeaseTTL/3)
	if !leased {
		lease = "NO lease: its control API did not take ?ttl=; the faults stay until cleared"
	}
	if err != nil {
		lease = "asked for a lease of " + r.e.Safeguards.LeaseTTL.String()
	}
	r.progress("method[%d]: inject %s on %s (%s)%s", i, faultsYAML(a.Faults), a.Backend, lease, errSuffix(err))
	if err != nil {
		r.progress("method[%d]: inject %s on %s%s", i, describeFaults(a.Faults), a.Backend, errSuffix(err))
		return fmt.Errorf("method[%d]: inject on %s: %w", i, a.Backend, err)
	}
	r.startLease(a.Backend, c, leased)
	if a.Duration > 0 {
		r.mu.Lock()
		r.timers = append(r.timers, time.AfterFunc(a.Duration, func() {
			cctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
			defer cancel()
			at := time.Now()
			err := c.clear(cctx)
			r.recordFault(a.Backend, "clear", nil, err, at)
			r.progress("method[%d]: duration %s over: clear %s%s", i, a.Duration, a.Backend, errSuffix(err))
		}))
		r.mu.Unlock()
	}
	return nil
}

// deviation is the finding of a check that did not hold: its name and
// what was observed (e.g. "dropped without an answer instead of an
// answered error").
func deviation(c history.Check) string {
	if c.Verdict == history.CheckNotApplicable {
		return c.Name + " " + c.Reason
	}
	return c.Name + " deviated: " + clip(c.Observed, 300)
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": FAILED: " + err.Error()
}

// faultsYAML is faults as one line of flow YAML, as the file writes them.
func faultsYAML(faults []any) string {
	var n yaml.Node
	if err := n.Encode(faults); err != nil {
		return fmt.Sprint(faults)
	}
	var flow func(*yaml.Node)
	flow = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
			n.Style = yaml.FlowStyle
		}
		for _, c := range n.Content {
			flow(c)
		}
	}
	flow(&n)
	out, err := yaml.Marshal(&n)
	if err != nil {
		return fmt.Sprint(faults)
	}
	return strings.TrimSpace(string(out))
}

func describeFaults(faults []any) string {
	var kinds []string
	for _, f := range faults {
		if m, ok := f.(map[string]any); ok {
			kinds = append(kinds, fmt.Sprint(m["kind"]))
		}
	}
	return strings.Join(kinds, "+")
}

func (r *runner) recordFault(backend, action string, faults []any, err error, start time.Time) {
	fr := history.FaultRecord{Backend: backend, Action: action, Duration: history.Millis(time.Since(start))}
	if len(faults) > 0 {
		fr.Kinds = strings.Split(describeFaults(faults), "+")
		fr.Detail = clip(faultsYAML(faults), 300)
	}
	if err != nil {
		fr.Error = err.Error()
	}
	r.rec.RecordFaultSpan(fr, start)
}

// startLease renews the backend's lease every third of its TTL until the
// rollback; leased is what the injection's answer said. A control API
// that did not take the lease is noted once. A lease that is gone (the
// faults expired) aborts the run.
func (r *runner) startLease(name string, c *control, leased bool) {
	r.mu.Lock()
	if _, known := r.leasing[name]; known {
		r.mu.Unlock()
		return
	}
	r.leasing[name] = leased
	r.mu.Unlock()
	if !leased {
		r.rec.Note("%s: its control API did not hold the faults under a lease (no \"lease\" in the answer to POST /faults?ttl=): they stay until the rollback clears them", name)
		r.progress("note: %s holds faults without a lease", name)
		return
	}
	ttl := r.e.Safeguards.LeaseTTL
	var t *time.Timer
	renew := func() {
		rctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
		gone, err := c.renew(rctx, ttl)
		cancel()
		if gone {
			select {
			case r.lost <- fmt.Errorf("the lease on %s is gone (its faults expired): %v", name, err):
			default:
			}
			return
		}
		if err != nil {
			r.rec.Note("renewing the lease on %s failed: %v", name, err)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.leasing[name] {
			t.Reset(ttl / 3)
		}
	}
	r.mu.Lock()
	t = time.AfterFunc(ttl/3, renew)
	r.timers = append(r.timers, t)
	r.mu.Unlock()
}

// stopTimers ends lease renewals and scheduled clears.
func (r *runner) stopTimers() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.leasing {
		r.leasing[k] = false
	}
	for _, t := range r.timers {
		t.Stop()
	}
}

// resolveGateway sets the prober's gateway: deployment.gateway, or the
// Service deployment.kube.gateway names, through the API server.
func (r *runner) resolveGateway() error {
	k := r.e.Deployment.Kube
	if k == nil || k.Gateway == nil {
		r.probes.gateway = r.e.Deployment.Gateway
		return nil
	}
	r.probes.gateway = fmt.Sprintf("Service %s/%s", k.Namespace, k.Gateway.Service)
	if r.opts.Services == nil {
		return fmt.Errorf("deployment.kube.gateway: no cluster to reach Service %s/%s through", k.Namespace, k.Gateway.Service)
	}
	url, wrap, err := r.opts.Services.Gateway(k.Namespace, *k.Gateway)
	if err != nil {
		return fmt.Errorf("deployment.kube.gateway: %w", err)
	}
	r.probes.gateway, r.probes.wrap = url, wrap
	return nil
}
