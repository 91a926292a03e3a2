package experiment

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/internal/redact"
)

// preflight checks every endpoint before anything is applied: the gateway
// answers MCP (a session and tools/list), the health URL answers, and
// every control API answers with no fault set. It returns why the run
// must stop, or "".
func (r *runner) preflight(ctx context.Context) string {
	var problems []string
	pass := func(name, expected, observed string, err error, start time.Time) {
		if err != nil {
			problems = append(problems, name+": "+err.Error())
		}
		r.check(r.errCheck("preflight: "+name, expected, observed, err, start))
	}
	start := time.Now()
	obs := ""
	c, err := r.probes.dial(ctx, r.e.Safeguards.CallTimeout)
	if err == nil {
		var names []string
		names, err = c.ToolNames(ctx)
		closeClient(c)
		obs = fmt.Sprintf("%d tools listed", len(names))
	}
	pass("gateway", "the gateway answers MCP at "+r.probes.gateway, obs, err, start)
	if h := r.e.Deployment.Health; h != nil {
		start = time.Now()
		states, err := r.probes.readHealth(ctx)
		pass("health", "the health URL answers backend states", "backends: "+strings.Join(states.Names(), ", "), err, start)
	}
	for _, b := range r.e.Deployment.Backends {
		start = time.Now()
		if b.Service != "" {
			ns := r.e.Deployment.Kube.Namespace
			err := fmt.Errorf("no cluster to act on (deployment.kube)")
			if r.opts.Services != nil {
				err = r.opts.Services.Check(ctx, ns, b.Service)
			}
			pass("service "+b.Name, fmt.Sprintf("Service %s/%s exists and the fault proxy can stand in for it (not injected)", ns, b.Service), "can be injected", err, start)
			continue
		}
		ctl := r.controls[b.Name]
		faults, err := ctl.faults(ctx)
		obs := "no fault set"
		if err == nil && len(faults) > 0 {
			err = fmt.Errorf("%d fault(s) already set on %s (another experiment, or one not rolled back?): clear them first (%s)", len(faults), b.Name, ctl.curl())
		}
		if err == nil {
			if ctl.leases(ctx) {
				obs += "; holds faults under leases: GET /lease answers"
			} else {
				obs += "; no lease API: GET /lease does not answer; unless POST /faults?ttl= takes a lease, faults stay until cleared"
			}
		}
		pass("control "+b.Name, "the control API at "+b.Control+" answers, with no fault set", obs, err, start)
	}
	if len(problems) > 0 {
		return "before any fault: " + strings.Join(problems, "; ")
	}
	return ""
}

// rollback always runs: it stops the lease renewals and clears every
// backend of the deployment, then verifies each is clean. It returns one
// loud message per backend that could not be verified clean, with the
// command that clears it by hand.
func (r *runner) rollback() []string {
	r.stopTimers()
	var failures []string
	for _, name := range slices.Sorted(maps.Keys(r.controls)) {
		ctl := r.controls[name]
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 2*controlTimeout)
		err := ctl.clear(ctx)
		var left []any
		if err == nil {
			left, err = ctl.faults(ctx)
			if err == nil && len(left) > 0 {
				err = fmt.Errorf("%d fault(s) still set after DELETE /faults", len(left))
			}
		}
		cancel()
		r.mu.Lock()
		dirty := r.dirty[name]
		r.mu.Unlock()
		if dirty || err != nil {
			r.recordFault(name, "clear", nil, err, start)
		}
		c := r.errCheck("rollback: "+name+" clean", "no fault set on "+name+" (GET /faults lists none)", "clean", err, start)
		if err != nil {
			msg := fmt.Sprintf("ROLLBACK FAILED on %s: %v\n  clear it by hand: %s", name, err, ctl.curl())
			if dirty {
				msg += fmt.Sprintf("\n  (a control API with leases, a chaos proxy or fake backend, also drops its faults when their lease of %s is not renewed)", r.e.Safeguards.LeaseTTL)
			}
			failures = append(failures, msg)
			r.progress("%s", msg)
		}
		r.check(c)
	}
	failures = append(failures, r.rollbackServices()...)
	return append(failures, r.deleteObjects()...)
}

// errCheck is the check of a step that began at start: passed with
// observed, or failed with err.
func (r *runner) errCheck(name, expected, observed string, err error, start time.Time) history.Check {
	c := history.Check{Name: name, Expected: expected, Observed: observed,
		At: history.Millis(r.rec.Since()), Took: history.Millis(time.Since(start)), Verdict: history.CheckPassed, Property: history.PropRuns}
	if err != nil {
		c.Verdict, c.Observed = history.CheckFailed, err.Error()
	}
	return c
}

// journal builds the results document: one scenario (the experiment) whose
// checks are the preflight, every probe and the rollback.
func (r *runner) journal(out *Outcome) *history.Results {
	res := harness.NewResults(nil)
	res.Target = redact.Text(r.probes.gateway)
	res.Interrupted = out.Status == StatusInterrupted
	if out.Status == StatusHeld && !out.RollbackFailed {
		r.rec.Pass()
	} else {
		reason := string(out.Status) + prefixed(": ", out.Reason)
		if out.RollbackFailed {
			reason += "; rollback failed: " + strings.Join(out.RollbackErrors, "; ")
		}
		r.rec.Fail(reason)
	}
	if out.Status == StatusHeld && out.Reason != "" {
		r.rec.Note("%s", out.Reason)
	}
	r.rec.SetFigure("duration_ms", float64(time.Since(r.started).Microseconds())/1000)
	r.rec.SetFigure("exit_code", float64(out.ExitCode()))
	sr := r.rec.Result()
	sr.Checks = r.checks
	res.Scenarios = append(res.Scenarios, sr)
	return res
}

// printPlan prints what the run would do.
func (r *runner) printPlan() {
	e := r.e
	r.progress("plan (dry run):")
	for _, b := range e.Deployment.Backends {
		if b.Service != "" {
			r.progress("  backend %s: Service %s/%s (inject puts the fault proxy in front of it in the cluster; clear and the rollback heal it)", b.Name, e.Deployment.Kube.Namespace, b.Service)
			continue
		}
		r.progress("  backend %s: control %s", b.Name, b.Control)
	}
	for _, p := range e.SteadyState.Probes {
		r.progress("  steady state: %s: %s", p.Name, r.probes.expected(&p))
	}
	for i, s := range e.Method {
		switch {
		case s.Pause > 0:
			r.progress("  method[%d]: pause %s", i, s.Pause)
		case s.Probe != nil:
			r.progress("  method[%d]: probe %s: %s", i, s.Probe.Name, r.probes.expected(s.Probe))
		case s.Action.Type == ActionChaosMesh:
			r.progress("  method[%d]: create %s (deleted by the rollback)", i, s.Action.Object["kind"])
		case s.Action.Type == ActionInject:
			d := ""
			if s.Action.Duration > 0 {
				d = " for " + s.Action.Duration.String()
			}
			r.progress("  method[%d]: inject %s on %s%s (asking for a lease of %s, renewed every %s, where its control API holds leases)", i, clip(faultsYAML(s.Action.Faults), 200),
				s.Action.Backend, d, e.Safeguards.LeaseTTL, e.Safeguards.LeaseTTL/3)
		default:
			r.progress("  method[%d]: clear %s", i, s.Action.Backend)
		}
	}
	r.progress("  steady state again, then rollback: clear and verify %d backend(s)", len(e.Deployment.Backends))
	r.progress("  safeguards: maxDuration %s, leaseTTL %s, callTimeout %s", e.Safeguards.MaxDuration, e.Safeguards.LeaseTTL, e.Safeguards.CallTimeout)
}
