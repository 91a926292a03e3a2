package harness

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A scenario's time budget is the harness's own time: what it spends
// starting calls, setting faults, polling and judging. Time a gateway
// takes by making calls wait for the client's own deadline (a gateway
// with no call timeout) is the gateway's, and extends the budget, up to
// BudgetCap times the budget. When the budget runs out anyway, the
// scenario's context ends with a *BudgetError as its cause, and whatever
// was not judged is inconclusive for that reason, never a failure of the
// gateway.

// BudgetCap bounds a scenario's wall time, as a multiple of its budget,
// however long its calls waited on their deadlines.
const BudgetCap = 2

// BudgetError is the cause of a scenario context whose time budget ran
// out (context.Cause); it unwraps to context.DeadlineExceeded.
type BudgetError struct {
	// Budget is the scenario's own time budget.
	Budget time.Duration
	// Waited is how long its failing calls waited for their end (the
	// gateway's time, added to the budget).
	Waited time.Duration
	// Elapsed is the scenario's wall time when the budget ran out.
	Elapsed time.Duration
}

// Error says when and why the budget ran out.
func (e *BudgetError) Error() string {
	return fmt.Sprintf("the scenario's time budget ran out after %s (budget %s, plus %s its failing calls waited for their end; at most %s in all)",
		e.Elapsed.Round(10*time.Millisecond), e.Budget, e.Waited.Round(10*time.Millisecond), BudgetCap*e.Budget)
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
// end) exceeds budget, or BudgetCap × budget after the start,
// with a *BudgetError as its cause. It has no deadline of its own: a
// call made under it keeps its full call deadline.
func WithBudget(parent context.Context, budget time.Duration, waited func() time.Duration) (context.Context, context.CancelFunc) {
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
			due := min(budget+w, BudgetCap*budget)
			if elapsed >= due {
				cancel(&BudgetError{Budget: budget, Waited: w, Elapsed: elapsed})
				return
			}
			t.Reset(due - elapsed)
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}
