package harness

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// A scenario's time budget is the harness's own time: what it spends
// starting calls, setting faults, polling and judging. Time a gateway
// takes by making calls wait for the client's own deadline (a gateway
// with no call timeout), or by being slow to recover from a fault, is
// the gateway's, and extends the budget, up to BudgetCap times the
// budget. When the budget runs out anyway, the
// scenario's context ends with a *BudgetError as its cause, and whatever
// was not judged is inconclusive for that reason, never a failure of the
// gateway.

// BudgetCap bounds a scenario's wall time, as a multiple of its budget,
// however long its calls waited on their deadlines (for a gateway that
// declares a recovery window longer than targets.DefaultRecovery, in
// proportion: MaxWall).
const BudgetCap = 2

// MaxWall is the most a scenario with budget may run against a gateway
// that may take recovery to return to steady state after a fault:
// BudgetCap times the budget, scaled by how much longer than
// targets.DefaultRecovery the gateway's recovery is (its steps wait that
// long for steady state, on failing calls).
func MaxWall(budget, recovery time.Duration) time.Duration {
	scale := float64(max(recovery, targets.DefaultRecovery)) / float64(targets.DefaultRecovery)
	return time.Duration(float64(BudgetCap*budget) * scale)
}

// BudgetError is the cause of a scenario context whose time budget ran
// out (context.Cause); it unwraps to context.DeadlineExceeded.
type BudgetError struct {
	// Budget is the scenario's own time budget.
	Budget time.Duration
	// Waited is how long it waited on the gateway (its failing calls
	// waiting for their end, the harness waiting for the gateway's
	// recovery: history.Recorder.WaitedOnFailures), added to the budget.
	Waited time.Duration
	// Elapsed is the scenario's wall time when the budget ran out.
	Elapsed time.Duration
	// Cap is the most the scenario could run (MaxWall).
	Cap time.Duration
}

// Error says when and why the budget ran out.
func (e *BudgetError) Error() string {
	return fmt.Sprintf("the scenario's time budget ran out after %s (budget %s, plus %s it waited on the gateway: failing calls, recovery; at most %s in all)",
		e.Elapsed.Round(10*time.Millisecond), e.Budget, e.Waited.Round(10*time.Millisecond), e.Cap)
}

// Unwrap makes a BudgetError a deadline.
func (e *BudgetError) Unwrap() error { return context.DeadlineExceeded }

// BudgetOut returns the *BudgetError that ended ctx, or nil while ctx
// runs or when it ended otherwise (an interrupt).
func BudgetOut(ctx context.Context) *BudgetError {
	var b *BudgetError
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &b) {
		return b
	}
	return nil
}

// WithBudget returns a context that ends once the time spent beyond
// what waited reports (the scenario's failing calls waiting for their
// end) exceeds budget, or limit after the start (MaxWall),
// with a *BudgetError as its cause. It has no deadline of its own: a
// call made under it keeps its full call deadline.
func WithBudget(parent context.Context, budget, limit time.Duration, waited func() time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	start := time.Now()
	go func() {
		t := time.NewTimer(budget)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			elapsed := time.Since(start)
			w := min(waited(), elapsed)
			due := min(budget+w, limit)
			if elapsed >= due {
				cancel(&BudgetError{Budget: budget, Waited: w, Elapsed: elapsed, Cap: limit})
				return
			}
			t.Reset(due - elapsed)
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}
