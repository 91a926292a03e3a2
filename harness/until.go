package harness

import (
	"context"
	"time"

	"github.com/onsi/gomega"
)

// Until polls cond every interval until it holds, d passes or ctx ends,
// and reports whether it held (it is checked once more at the end). It is
// Gomega's Eventually, as a plain bool: the caller judges the outcome.
func Until(ctx context.Context, d, every time.Duration, cond func() bool) bool {
	ok := true
	g := gomega.NewGomega(func(string, ...int) { ok = false })
	g.Eventually(ctx, cond).WithTimeout(d).WithPolling(every).Should(gomega.BeTrue())
	return ok || cond()
}
