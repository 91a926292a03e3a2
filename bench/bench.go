// Package bench measures a gateway's performance against calling its
// backends directly, in the same run: call throughput and latency on both
// protocol revisions, the gateway's CPU per call against the backend's own,
// its peak RSS, and how fast sessions open. Its figures go into the
// harness results document (scenarios named bench/...), beside the
// resilience verdicts. `chaos bench` is its command line.
package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// Config is one bench run.
type Config struct {
	// Target is the gateway under test; it must run as a process
	// (targets.Exec) so its CPU time and RSS can be read from /proc.
	Target targets.Target
	// Runtime starts the fake backends (runtimes.Process: their CPU is
	// measured too).
	Runtime runtimes.BackendRuntime
	// Clients, Duration and Calls bound each load run (per revision and
	// per endpoint); CallTimeout is every call's deadline.
	Clients     int
	Duration    time.Duration
	Calls       int
	CallTimeout time.Duration
	// Pairs is how many times the call figures measure direct, then the
	// gateway (the order alternating); the pair with the median
	// throughput ratio gives the figures, the others the spread
	// (default 3).
	Pairs int
	// Opens is how many sessions are opened one after another for the
	// session-open medians; Sessions how many are opened (16 at a time)
	// for the many-sessions figure (0 skips it).
	Opens    int
	Sessions int
	// Revisions to run the call figures on (default both).
	Revisions []history.Revision
	// Steps picks what runs (StepNames; default all): StepCalls (the call
	// figures, the 2-backend open, the many-sessions open), StepOpen500,
	// StepErrors (time to error), StepStall, StepScale.
	Steps []string
	// ErrorCalls is how many calls time-to-error makes per endpoint and
	// per fault (default 100).
	ErrorCalls int
	// StallTimeout is the backend call timeout the gateway of the error
	// and stall figures is configured with (default 1 s); StallCalls how
	// many calls are stalled at once (default 5); StallDeadline is each
	// stall call's own deadline, which bounds how long a gateway that
	// ignores its timeout is watched (default 35 s).
	StallTimeout  time.Duration
	StallCalls    int
	StallDeadline time.Duration
	// ScaleSessions are the session counts of the scale figures, one
	// scenario each (empty: none); ScaleDuration bounds each one's
	// healthy load, ScaleRate is its calls per second; CrashEvery is the
	// period of the crash-looping backend (killed, then restarted).
	ScaleSessions []int
	ScaleDuration time.Duration
	ScaleRate     int
	CrashEvery    time.Duration
	// Progress receives one line per step (nil: none).
	Progress io.Writer

	// pattern is the target's tool name pattern
	// (targets.ToolNamePatternOf), set by defaults.
	pattern string
}

func (c *Config) defaults() {
	orPositive(&c.Clients, 64)
	orPositive(&c.Duration, 3*time.Second)
	orPositive(&c.CallTimeout, 5*time.Second)
	orPositive(&c.Pairs, 3)
	orPositive(&c.Opens, 30)
	if len(c.Revisions) == 0 {
		c.Revisions = history.Revisions
	}
	if len(c.Steps) == 0 {
		c.Steps = StepNames
	}
	orPositive(&c.ErrorCalls, 100)
	orPositive(&c.StallTimeout, time.Second)
	orPositive(&c.StallCalls, 5)
	orPositive(&c.StallDeadline, 35*time.Second)
	orPositive(&c.ScaleDuration, 10*time.Second)
	orPositive(&c.ScaleRate, 500)
	orPositive(&c.CrashEvery, time.Second)
	c.Progress = cmp.Or(c.Progress, io.Discard)
	if c.Target != nil {
		c.pattern = targets.ToolNamePatternOf(c.Target)
	}
}

// orPositive sets *v to def unless it is positive.
func orPositive[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// topology is started backends with a gateway in front of them.
type topology struct {
	backends []runtimes.RunningBackend
	gateway  targets.Gateway
	// info is what the gateway was started with (each backend's Tools
	// included: a target with ready.tools waits until it lists them).
	info targets.TopologyInfo
}

func (t *topology) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if t.gateway != nil {
		_ = t.gateway.Close(ctx)
	}
	for _, b := range t.backends {
		_ = b.Close(ctx)
	}
}

func pidOf(x any) int {
	if p, ok := x.(interface{ PID() int }); ok {
		return p.PID()
	}
	return -1
}

// start starts the backends, then the gateway configured with
// callTimeout as its backend call timeout.
func (c *Config) start(ctx context.Context, callTimeout time.Duration, scripts ...*fakebackends.Script) (*topology, error) {
	t := &topology{}
	// The gateway must hold every session a step opens at once (the
	// many-sessions and scale figures, the call clients), with room for
	// the readiness probe and the tool look-ups.
	need := max(c.Sessions, c.Clients, c.StallCalls)
	for _, n := range c.ScaleSessions {
		need = max(need, n)
	}
	info := targets.TopologyInfo{CallTimeout: callTimeout, Features: runtimes.Features{MaxSessions: need + 100}}
	for _, s := range scripts {
		b, err := c.Runtime.Start(ctx, s)
		if err != nil {
			t.close()
			return nil, fmt.Errorf("start backend %s: %w", s.Name, err)
		}
		t.backends = append(t.backends, b)
		bi := b.Info()
		bi.Tools = scriptTools(s)
		info.Backends = append(info.Backends, bi)
	}
	t.info = info
	g, err := c.Target.Start(ctx, info)
	if err != nil {
		t.close()
		return nil, fmt.Errorf("start gateway %s: %w", c.Target.Name(), err)
	}
	t.gateway = g
	return t, nil
}

// Run runs every bench scenario and returns the results (also when ctx
// ends early: Interrupted is then set and the rest is missing). An error
// means the bench could not run (a topology did not start).
func Run(ctx context.Context, cfg Config) (*history.Results, error) {
	cfg.defaults()
	if cfg.Target == nil || cfg.Runtime == nil {
		return nil, errors.New("bench: config needs a target and a backend runtime")
	}
	for _, s := range cfg.Steps {
		if !slices.Contains(StepNames, s) {
			return nil, fmt.Errorf("bench: unknown step %q (want one of %s)", s, strings.Join(StepNames, ", "))
		}
	}
	results := harness.NewResults(cfg.Target)
	steps := []struct {
		on  bool
		run func(context.Context, *Config, *history.Results) error
	}{
		{cfg.has(StepCalls), runCalls2},
		{cfg.has(StepOpen500), runOpen500},
		{cfg.has(StepErrors) || cfg.has(StepStall), runFaults},
		{cfg.has(StepScale) && len(cfg.ScaleSessions) > 0, runScale},
	}
	for _, step := range steps {
		if !step.on {
			continue
		}
		if err := step.run(ctx, &cfg, results); err != nil {
			if ctx.Err() == nil {
				return results, err
			}
			break // interrupted
		}
	}
	results.Interrupted = ctx.Err() != nil
	return results, nil
}

// Steps of a bench run (Config.Steps).
const (
	StepCalls   = "calls"
	StepOpen500 = "open500"
	StepErrors  = "errors"
	StepStall   = "stall"
	StepScale   = "scale"
)

// StepNames are every step, in the order they run.
var StepNames = []string{StepCalls, StepOpen500, StepErrors, StepStall, StepScale}

func (c *Config) has(step string) bool { return slices.Contains(c.Steps, step) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (c *Config) progress(format string, args ...any) {
	fmt.Fprintf(c.Progress, "chaos bench: "+format+"\n", args...)
}
