package harness

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWithBudget: the budget ends the context with a *BudgetError (a
// deadline); time the scenario's failing calls waited for their end
// extends it, up to BudgetCap times the budget; a cancel is no budget.
func TestWithBudget(t *testing.T) {
	const budget = 200 * time.Millisecond
	for _, tc := range []struct {
		name     string
		waited   time.Duration
		min, max time.Duration
	}{
		{"own time only", 0, budget, budget + 2*time.Second},
		{"extended by waits", 100 * time.Millisecond, budget + 100*time.Millisecond, budget + 2*time.Second},
		{"at most the cap", time.Hour, BudgetCap * budget, BudgetCap*budget + 2*time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			ctx, cancel := WithBudget(context.Background(), budget, MaxWall(budget, 0), func() time.Duration { return min(tc.waited, time.Since(start)) })
			defer cancel()
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the budget never ran out")
			}
			took := time.Since(start)
			b := BudgetOut(ctx)
			if b == nil || !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
				t.Fatalf("cause %v: want a *BudgetError that is a deadline", context.Cause(ctx))
			}
			if took < tc.min || took > tc.max {
				t.Errorf("ran out after %s, want between %s and %s (%v)", took, tc.min, tc.max, b)
			}
		})
	}
	ctx, cancel := WithBudget(context.Background(), time.Hour, time.Hour, func() time.Duration { return 0 })
	cancel()
	if BudgetOut(ctx) != nil || ctx.Err() == nil {
		t.Fatalf("a cancelled context: err %v, budget %v", ctx.Err(), BudgetOut(ctx))
	}
	if got := MaxWall(time.Minute, 30*time.Second); got != 12*time.Minute {
		t.Errorf("MaxWall(1m, recovery 30s) = %s, want 12m (2 x 1m, 6 x the default recovery)", got)
	}
}
