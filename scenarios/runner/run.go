package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
)

// RunConfig says how to run scenarios.
type RunConfig struct {
	// Target is the gateway under test (default targets.Reference{}).
	Target targets.Target
	// CheckLeaks fails a scenario that leaves goroutines running after its
	// teardown (goleak, with runtimes.LeakOptions).
	CheckLeaks bool
	// TeardownTimeout bounds Env.Close (default Env.CloseTimeout: 20 s,
	// more for components that need it, e.g. containers).
	TeardownTimeout time.Duration
	// Runtime is RuntimeDefault or RuntimeContainer (the HTTP backends of
	// every scenario run as containers).
	Runtime string
	// Starts, when set, is shared by the scenarios of one run: once
	// topologies failed to start twice in a row, the rest fail at once
	// with that reason instead of each waiting out its readiness.
	Starts *targets.StartGuard
	// Gate, when set, bounds how many in-process scenarios its sharers
	// run at once; Run waits for it (Gate.Enter: container scenarios for
	// a host-wide slot instead) before the scenario's clock starts.
	Gate *Gate
	// SlotsHeld says the caller already holds the scenario's slots
	// (Gate.Enter): Run takes none.
	SlotsHeld bool
}

// failure is what the fail handler panics with; the runner recovers it.
type failure struct{ msg string }

// newGomega returns a Gomega whose failures end the scenario body: the
// handler stores the message (with the failing line) and panics; Run
// recovers the panic and fails the scenario. Only the goroutine running
// the body may assert with it.
func newGomega() gomega.Gomega {
	return gomega.NewGomega(func(message string, callerSkip ...int) {
		skipN := 1
		if len(callerSkip) > 0 {
			skipN += callerSkip[0]
		}
		where := ""
		if _, file, line, ok := runtime.Caller(skipN); ok {
			where = fmt.Sprintf("%s:%d: ", filepath.Base(file), line)
		}
		panic(failure{msg: where + message})
	})
}

// Run runs one scenario against cfg.Target and returns its recorder, with
// the verdict set: skipped (the target lacks a capability the scenario
// needs), inconclusive (the harness's own backends did not start: the
// gateway was never judged), failed (a check failed, the body was aborted
// by a failed assertion, the gateway did not start, the environment broke
// a promise such as VMCP_CHAOS_REQUIRE_DOCKER=1, the topology did not
// tear down, the scenario overran
// its timeout, or goroutines leaked) or passed. Every failure is a failed
// check on the recorder; the reason lists the failed checks by name first
// ("2/11 checks failed: a; b"), then what each observed. It never panics
// and returns within the scenario's timeout plus the teardown timeout.
func Run(ctx context.Context, sc Scenario, cfg RunConfig) *history.Recorder {
	target := cfg.Target
	if target == nil {
		target = targets.Reference{}
	}
	if missing := target.Capabilities().Missing(sc.Needs...); len(missing) > 0 {
		rec := history.NewRecorder(sc.Name, sc.Labels...)
		rec.Skip((&targets.MissingCapabilityError{Target: target.Name(), Missing: missing}).Error())
		return rec
	}
	leave, waited := func() {}, time.Duration(0)
	var err error
	if !cfg.SlotsHeld {
		leave, waited, err = cfg.Gate.EnterFor(ctx, target.Name(), sc, cfg.Runtime)
	}
	rec := history.NewRecorder(sc.Name, sc.Labels...)
	if err != nil {
		rec.Fail("not started: " + err.Error())
		return rec
	}
	defer leave()
	if waited >= 100*time.Millisecond {
		rec.Note("waited %s for a slot to run in (other scenarios of this host or process were running)", waited.Round(time.Millisecond))
	}
	var verdict outcome
	leakCheck := labelRun(ctx, sc.Name, func(ctx context.Context) { verdict = startRunClose(ctx, sc, cfg, target, rec) })
	if verdict.kind == "" {
		return rec // skipped or failed to start: rec says why
	}
	if cfg.CheckLeaks && verdict.kind != history.VerdictSkipped {
		if leak := leakCheck(); leak != "" {
			rec.AddCheck(history.Check{Name: leakCheckName, Verdict: history.CheckFailed, Observed: leak})
			if verdict.kind == history.VerdictPassed {
				verdict = outcome{history.VerdictFailed, leak}
			}
		}
	}
	if failed := rec.FailedChecks(); len(failed) > 0 && verdict.kind != history.VerdictSkipped {
		verdict = outcome{history.VerdictFailed, checksReason(rec.Result())}
	} else if verdict.kind == history.VerdictPassed {
		if res := rec.Result(); len(res.Inconclusive()) > 0 {
			verdict = outcome{history.VerdictInconclusive, inconclusiveReason(res)}
		}
	}
	rec.SetVerdict(verdict.kind, verdict.reason)
	return rec
}

// startRunClose starts sc's topology, runs its body and tears it down,
// returning the body's outcome; the zero outcome when the scenario ended
// before its body (rec is skipped or failed, saying why).
func startRunClose(ctx context.Context, sc Scenario, cfg RunConfig, target targets.Target, rec *history.Recorder) outcome {
	timeout := sc.Budget()
	// The scenario's budget is the harness's time: time its failing
	// calls spent waiting for their end is the gateway's, and extends it.
	runCtx, cancel := harness.WithBudget(ctx, timeout, sc.MaxWall(target), rec.WaitedOnFailures)
	defer cancel()

	topo := sc.Topology()
	for _, b := range topo.Backends {
		if b.Script != nil {
			if why := targets.TransportsOf(target).Lacks(string(b.Script.Transport)); why != "" {
				rec.Skip("not applicable: " + why)
				return outcome{}
			}
		}
	}
	kit.AdaptTopology(&topo, target)
	topo.Name, topo.Labels, topo.Target, topo.Recorder = sc.Name, sc.Labels, target, rec
	if cfg.Runtime == RuntimeContainer {
		containerize(&topo)
	}
	if why := cfg.Starts.Tripped(); why != "" {
		rec.AddCheck(history.Check{Name: "topology starts", Verdict: history.CheckFailed, Observed: why})
		rec.Fail("start topology: " + why)
		return outcome{}
	}
	env, err := harness.Start(runCtx, topo)
	var skipErr *runtimes.SkipError
	if errors.As(err, &skipErr) {
		rec.Skip(skipErr.Reason)
		return outcome{}
	}
	if err != nil {
		cfg.Starts.Failed(err)
		var gateway *targets.TargetStartError
		var required *runtimes.RequiredError
		if !errors.As(err, &gateway) && !errors.As(err, &required) {
			// The harness's own backends (or its engine) did not start:
			// the gateway was never started, so no verdict on it.
			why := "the harness could not start its backends, so the gateway was never started: " + err.Error()
			rec.AddCheck(history.Check{Name: "topology starts", Verdict: history.CheckInconclusive, Reason: why, Observed: err.Error()})
			rec.SetVerdict(history.VerdictInconclusive, "start topology: "+why)
			return outcome{}
		}
		rec.AddCheck(history.Check{Name: "topology starts", Verdict: history.CheckFailed, Observed: err.Error()})
		rec.Fail("start topology: " + err.Error())
		return outcome{}
	}
	cfg.Starts.Started()

	// Every scenario's timing checks are judged knowing what the machine
	// did meanwhile: this process's stalls.
	stalls := kit.WatchStallsOnly()
	verdict := runBody(kit.WithStalls(runCtx, stalls), sc, env)
	stalls.Stop()
	if ctx.Err() != nil && verdict.kind != history.VerdictSkipped {
		// The run was cut short (a signal): what the body failed on, or
		// its "overran", is the interruption, not the gateway.
		verdict = outcome{history.VerdictInterrupted, fmt.Sprintf("interrupted (%v)", context.Cause(ctx))}
	}
	if b := harness.BudgetOut(runCtx); b != nil && ctx.Err() == nil && !strings.HasPrefix(verdict.reason, stuckReason) && (verdict.kind == history.VerdictFailed || verdict.kind == history.VerdictPassed) {
		// The harness's own time ran out: what was not judged is no
		// verdict on the gateway (the checks judged keep theirs).
		rec.AddCheck(history.Check{Name: "scenario ran to the end", Verdict: history.CheckInconclusive, Reason: b.Error(), Observed: verdict.reason})
		verdict = outcome{history.VerdictInconclusive, b.Error()}
	}
	switch verdict.kind {
	case history.VerdictFailed:
		rec.AddCheck(history.Check{Name: abortName(verdict.reason), Verdict: history.CheckFailed, Observed: verdict.reason})
	case history.VerdictInconclusive:
		rec.AddCheck(history.Check{Name: abortName(verdict.reason), Verdict: history.CheckInconclusive, Reason: verdict.reason, Observed: verdict.reason})
	}

	teardown := cfg.TeardownTimeout
	if teardown <= 0 {
		teardown = env.CloseTimeout()
	}
	closeCtx, closeCancel := context.WithTimeout(context.WithoutCancel(ctx), teardown)
	closeErr := env.Close(closeCtx)
	closeCancel()
	if closeErr != nil && verdict.kind != history.VerdictSkipped {
		rec.AddCheck(history.Check{Name: "teardown within its deadline", Verdict: history.CheckFailed, Observed: closeErr.Error()})
		if verdict.kind == history.VerdictPassed {
			verdict = outcome{history.VerdictFailed, "teardown: " + closeErr.Error()}
		}
	}
	return verdict
}

// Budget is the scenario's own time budget: its Timeout, a minute when
// unset (harness.WithBudget extends it by the time its calls wait on
// their deadlines, up to MaxWall).
func (sc Scenario) Budget() time.Duration {
	if sc.Timeout <= 0 {
		return time.Minute
	}
	return sc.Timeout
}

// MaxWall bounds how long the scenario's body may run against target:
// its budget extended by its failing calls' waits, at most
// harness.MaxWall (twice the budget, more for a gateway that declares a
// long recovery).
func (sc Scenario) MaxWall(target targets.Target) time.Duration {
	return harness.MaxWall(sc.Budget(), targets.RecoveryOf(target))
}

// abortName names the check an aborted body failed: "aborted at
// file.go:12: connect a legacy client".
func abortName(reason string) string {
	first, _, _ := strings.Cut(reason, "\n")
	first = strings.TrimSpace(first)
	if len(first) > 120 {
		first = first[:117] + "..."
	}
	return "scenario ran to the end (aborted at " + first + ")"
}

// checksReason is a failed scenario's reason: the failed checks by name,
// counted against those judged, then what each observed.
func checksReason(res history.ScenarioResult) string {
	failed, judged := res.CheckCounts()
	var names []string
	var details strings.Builder
	for _, c := range res.Checks {
		if c.Verdict != history.CheckFailed {
			continue
		}
		names = append(names, c.Name)
		fmt.Fprintf(&details, "\n- %s: %s", c.Name, strings.ReplaceAll(c.Observed, "\n", "\n    "))
	}
	return fmt.Sprintf("%d/%d checks failed: %s%s", failed, judged, strings.Join(names, "; "), details.String())
}

// inconclusiveReason is an inconclusive scenario's reason: the checks
// that could not be judged, and why each.
func inconclusiveReason(res history.ScenarioResult) string {
	inc := res.Inconclusive()
	var names []string
	var details strings.Builder
	for _, c := range inc {
		names = append(names, c.Name)
		fmt.Fprintf(&details, "\n- %s: %s", c.Name, strings.ReplaceAll(c.Reason, "\n", "\n    "))
	}
	return fmt.Sprintf("%d check(s) inconclusive: %s%s", len(inc), strings.Join(names, "; "), details.String())
}

type outcome struct {
	kind   history.Verdict
	reason string
}

// stuckReason starts the reason of a body that did not return after its
// context ended: a hang of the harness itself, never excused by the
// budget.
const stuckReason = "scenario did not return within its timeout"

// runBody runs the scenario body in its own goroutine, recovering
// failures, skips and panics, and gives up (failing) once ctx has ended
// and a grace has passed.
func runBody(ctx context.Context, sc Scenario, env *harness.Env) outcome {
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			r := recover()
			switch v := r.(type) {
			case nil:
				done <- outcome{history.VerdictPassed, ""}
			case failure:
				done <- outcome{history.VerdictFailed, v.msg}
			case *kit.HarnessError: // the harness's own part failed: no verdict
				done <- outcome{history.VerdictInconclusive, v.Error()}
			default:
				done <- outcome{history.VerdictFailed, fmt.Sprintf("panic: %v\n%s", v, debug.Stack())}
			}
		}()
		sc.Run(ctx, env, newGomega())
	}()
	select {
	case o := <-done:
		if o.kind == history.VerdictPassed && ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			return outcome{history.VerdictFailed, fmt.Sprintf("scenario overran its timeout (%s)", sc.Timeout)}
		}
		return o
	case <-ctx.Done():
	}
	grace := time.NewTimer(5 * time.Second)
	defer grace.Stop()
	select {
	case o := <-done:
		if o.kind == history.VerdictPassed {
			o = outcome{history.VerdictFailed, fmt.Sprintf("scenario overran its timeout (%s)", sc.Timeout)}
		}
		return o
	case <-grace.C:
		return outcome{history.VerdictFailed, fmt.Sprintf("%s (%s) + 5s", stuckReason, sc.Timeout)}
	}
}

// leakTB collects the leak check's error.
type leakTB struct {
	mu  sync.Mutex
	msg string
}

func (t *leakTB) Helper() {}
func (t *leakTB) Errorf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.msg = strings.TrimSpace(fmt.Sprintf(format, args...))
}
