package faults

import (
	"cmp"
	"net/http"
	"slices"
)

// KindCrash closes the connection (eof, reset) or the listener (down), or
// ends a stdio backend; exit: true also ends the process.
const KindCrash Kind = "crash"

// Crash modes.
const (
	CrashEOF   = "eof"   // close the connection
	CrashReset = "reset" // close with SO_LINGER 0: the peer sees a TCP RST
	CrashDown  = "down"  // close the listener: connection refused until cleared
)

// Stages at which a crash or stall happens.
const (
	StageBeforeHeaders = "before_headers"
	StageAfterHeaders  = "after_headers"
	StageAfterProgress = "after_progress" // stall only
	StageMidBody       = "mid_body"       // stall only
)

var (
	crashModes  = []string{CrashEOF, CrashReset, CrashDown}
	crashStages = []string{StageBeforeHeaders, StageAfterHeaders}
	// matchFields are the per-request fields a schedule-only fault refuses.
	matchFields = []string{"match", "after", "count", "probability", "seed"}
)

// Crash are the parameters of crash.
type Crash struct {
	Mode     string `yaml:"mode,omitempty" json:"mode,omitempty"` // eof (default), reset or down
	Exit     bool   `yaml:"exit,omitempty" json:"exit,omitempty"` // also end the process
	ExitCode int    `yaml:"exitCode,omitempty" json:"exitCode,omitempty"`
	Stage    string `yaml:"stage,omitempty" json:"stage,omitempty"` // before_headers (default) or after_headers
}

func init() {
	Register(Spec{Kind: KindCrash, Order: 10, New: func() Params { return &Crash{} }})
}

// Defaults implements Params.
func (p *Crash) Defaults() {
	p.Mode = cmp.Or(p.Mode, CrashEOF)
	if p.Mode != CrashDown && p.Stage == "" {
		p.Stage = StageBeforeHeaders
	}
	if p.Exit && p.ExitCode == 0 {
		p.ExitCode = 1
	}
}

// ScheduleOnly implements Params: mode down acts by time alone.
func (p *Crash) ScheduleOnly(*Fault) bool { return p.Mode == CrashDown }

// HTTP implements Params.
func (p *Crash) HTTP(x *Exchange) bool {
	if p.Exit && x.Exit != nil {
		x.Exit(p.ExitCode)
	}
	if p.Stage == StageAfterHeaders {
		x.W.Header().Set("Content-Type", "text/event-stream")
		x.W.WriteHeader(http.StatusOK)
		x.Flush()
	}
	AbortConn(x.W, p.Mode == CrashReset)
	return false
}

// Stdio implements Params.
func (p *Crash) Stdio(x *StdioExchange) { x.Crash(p.Exit, p.ExitCode) }

// Validate implements Params.
func (p *Crash) Validate(c *Check) error {
	if p.Mode != "" && !slices.Contains(crashModes, p.Mode) {
		return c.Errf("mode", "unknown crash mode %q (want %s)", p.Mode, join(crashModes))
	}
	if p.Mode == CrashDown {
		if c.Transport == TransportStdio {
			return c.Errf("mode", "crash mode down does not apply to stdio (there is no listener)")
		}
		if p.Stage != "" {
			return c.Errf("stage", "stage does not apply to mode down (the listener is closed)")
		}
		if p.Exit || p.ExitCode != 0 {
			return c.Errf("exit", "exit does not apply to mode down")
		}
		if f := setField(c.Fault, matchFields); f != "" {
			return c.Errf(f, "mode down takes no %s (it is schedule-only: use at and for)", f)
		}
	}
	if p.Stage != "" && !slices.Contains(crashStages, p.Stage) {
		if slices.Contains(stallStages, p.Stage) {
			return c.Errf("stage", "stage %s applies only to stall (crash stages: %s)", p.Stage, join(crashStages))
		}
		return c.Errf("stage", "unknown crash stage %q (want %s)", p.Stage, join(crashStages))
	}
	if c.Transport == TransportStdio && p.Stage == StageAfterHeaders {
		return c.Errf("stage", "stage after_headers does not apply to stdio")
	}
	if p.ExitCode != 0 && !p.Exit {
		return c.Errf("exitCode", "exitCode requires exit: true")
	}
	if p.ExitCode < 0 || p.ExitCode > 255 {
		return c.Errf("exitCode", "exit code %d out of range (want 1..255)", p.ExitCode)
	}
	return nil
}
