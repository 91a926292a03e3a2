// Package testwait is the tests' one way to wait for a condition: Gomega's
// Eventually, polled every 5 ms, failing the test with what it waited for.
package testwait

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
)

// For fails t unless cond holds within d; what names the awaited state in
// the failure.
func For(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	gomega.NewWithT(t).Eventually(cond).WithTimeout(d).WithPolling(5*time.Millisecond).
		Should(gomega.BeTrue(), "waiting %s for %s", d, what)
}
