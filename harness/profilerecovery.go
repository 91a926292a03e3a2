package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// RecoveryCheck is the name of CheckTarget's recovery measurement.
const RecoveryCheck = "recovery"

// measureRecovery restarts backend once (its MCP server behind the same
// listener: sessions forgotten) and measures how long the gateway takes to
// serve tool through it again: on c's session, or on a fresh one (a
// gateway may serve new sessions first). It waits at most
// targets.MaxRecovery (and ctx). The check fails when the time exceeds the
// target's recovery window (targets.RecoveryOf): the scenarios would wait
// too little and judge nothing after each fault. Fact carries the
// measured time.
func measureRecovery(ctx context.Context, env *Env, c *history.Client, backend, tool string) (ProfileCheck, time.Duration) {
	declared := targets.RecoveryOf(env.Target())
	if err := env.RestartBackend(ctx, backend); err != nil {
		return ProfileCheck{Name: RecoveryCheck, Status: history.CheckNotApplicable, Detail: fmt.Sprintf("could not restart %s: %v", backend, err)}, 0
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, targets.MaxRecovery)
	defer cancel()
	var last *history.Call
	lastFresh := time.Now()
	for ctx.Err() == nil {
		if last = c.CallTool(ctx, tool, map[string]any{"msg": "recovery"}); last.Outcome == history.OutcomeOK {
			break
		}
		if time.Since(lastFresh) >= time.Second { // a fresh session, once a second
			lastFresh = time.Now()
			if f, err := env.Client(ctx, history.RevisionLegacy, history.WithClientName("recovery-fresh")); err == nil {
				call := f.CallTool(ctx, tool, map[string]any{"msg": "recovery"})
				_ = f.Close(context.Background())
				if call.Outcome == history.OutcomeOK {
					last = call
					break
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	took := time.Since(start)
	if last == nil || last.Outcome != history.OutcomeOK {
		why := "no call was made"
		if last != nil {
			why = fmt.Sprintf("last: %s: %s", last.Outcome, last.Text())
		}
		return ProfileCheck{Name: RecoveryCheck, Status: history.CheckFailed, Detail: fmt.Sprintf(
			"after a restart of %s, %s was not served again within %s (%s): the scenarios after every fault on %s will not be judged",
			backend, tool, roundTook(took), why, backend)}, took
	}
	detail := fmt.Sprintf("%s's tools were back after %s (a restart of %s)", backend, roundTook(took), backend)
	suggest := SuggestRecovery(took)
	if took > declared {
		return ProfileCheck{Name: RecoveryCheck, Status: history.CheckFailed, Detail: fmt.Sprintf(
			"%s; the profile allows %s: set `recovery: %s` (else the checks after each backend fault are not judged: no steady state)", detail, declared, suggest)}, took
	}
	if suggest > declared {
		detail += fmt.Sprintf(", within the profile's %s but close: consider `recovery: %s` on a loaded machine", declared, suggest)
	} else {
		detail += fmt.Sprintf(", within the profile's %s", declared)
	}
	return ProfileCheck{Name: RecoveryCheck, Status: history.CheckPassed, Detail: detail}, took
}

// SuggestRecovery is the recovery window to declare for a gateway measured
// to recover in took: a quarter more plus 2 s (a loaded machine is
// slower), rounded up to 5 s, at least targets.DefaultRecovery and at most
// targets.MaxRecovery.
func SuggestRecovery(took time.Duration) time.Duration {
	d := took + took/4 + 2*time.Second
	step := 5 * time.Second
	d = (d + step - 1) / step * step
	return min(max(d, targets.DefaultRecovery), targets.MaxRecovery)
}

// roundTook is d to 100 ms, or to the millisecond below a second.
func roundTook(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
