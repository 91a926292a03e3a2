package faults

import "net/http"

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

func init() {
	Register(Spec{
		Kind:   KindCrash,
		Order:  10,
		Params: []string{"mode", "exit", "exitCode", "stage"},
		Defaults: func(f *Fault) {
			if f.Mode == "" {
				f.Mode = CrashEOF
			}
			if f.Mode != CrashDown && f.Stage == "" {
				f.Stage = StageBeforeHeaders
			}
			if f.Exit && f.ExitCode == 0 {
				f.ExitCode = 1
			}
		},
		Validate:     validateCrash,
		ScheduleOnly: func(f *Fault) bool { return f.Mode == CrashDown },
		HTTP: func(x *Exchange, f *Fault) bool {
			if f.Exit && x.Exit != nil {
				x.Exit(f.ExitCode)
			}
			if f.Stage == StageAfterHeaders {
				x.W.Header().Set("Content-Type", "text/event-stream")
				x.W.WriteHeader(http.StatusOK)
				x.Flush()
			}
			AbortConn(x.W, f.Mode == CrashReset)
			return false
		},
		Stdio: func(x *StdioExchange, f *Fault) { x.Crash(f.Exit, f.ExitCode) },
	})
}

func validateCrash(f *Fault, c *Check) error {
	if f.Mode != "" && !oneOf(f.Mode, crashModes) {
		return c.Errf("mode", "unknown crash mode %q (want %s)", f.Mode, join(crashModes))
	}
	if f.Mode == CrashDown {
		if c.Transport == TransportStdio {
			return c.Errf("mode", "crash mode down does not apply to stdio (there is no listener)")
		}
		if f.Stage != "" {
			return c.Errf("stage", "stage does not apply to mode down (the listener is closed)")
		}
		if f.Exit || f.ExitCode != 0 {
			return c.Errf("exit", "exit does not apply to mode down")
		}
		if p := setField(f, matchFields); p != "" {
			return c.Errf(p, "mode down takes no %s (it is schedule-only: use at and for)", p)
		}
	}
	if f.Stage != "" && !oneOf(f.Stage, crashStages) {
		if oneOf(f.Stage, stallStages) {
			return c.Errf("stage", "stage %s applies only to stall (crash stages: %s)", f.Stage, join(crashStages))
		}
		return c.Errf("stage", "unknown crash stage %q (want %s)", f.Stage, join(crashStages))
	}
	if c.Transport == TransportStdio && f.Stage == StageAfterHeaders {
		return c.Errf("stage", "stage after_headers does not apply to stdio")
	}
	if f.ExitCode != 0 && !f.Exit {
		return c.Errf("exitCode", "exitCode requires exit: true")
	}
	if f.ExitCode < 0 || f.ExitCode > 255 {
		return c.Errf("exitCode", "exit code %d out of range (want 1..255)", f.ExitCode)
	}
	return nil
}
