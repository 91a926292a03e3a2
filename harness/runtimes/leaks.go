package runtimes

import "go.uber.org/goleak"

// TB is the part of testing.TB (and of Ginkgo's GinkgoT()) the leak check
// needs.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
}

// IdleConnLoops are the functions of the idle HTTP connection goroutines
// net/http keeps (shared transports, keep-alives that close on their
// own): no leak check counts them.
var IdleConnLoops = []string{
	"net/http.(*persistConn).readLoop",
	"net/http.(*persistConn).writeLoop",
	"net/http.(*http2ClientConn).readLoop",
}

// LeakOptions are the goleak options the harness needs: the idle HTTP
// connection loops that net/http keeps (shared transports, keep-alives
// that close on their own), plus extra.
func LeakOptions(extra ...goleak.Option) []goleak.Option {
	opts := []goleak.Option{
		goleak.IgnoreTopFunction(IdleConnLoops[0]),
		goleak.IgnoreTopFunction(IdleConnLoops[1]),
		goleak.IgnoreAnyFunction(IdleConnLoops[2]),
		// Ginkgo's own machinery when the check runs inside a suite.
		goleak.IgnoreAnyFunction("github.com/onsi/ginkgo/v2/internal.(*Suite).runNode"),
		goleak.IgnoreAnyFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"),
	}
	return append(opts, extra...)
}

// CheckLeaks fails t when goroutines other than the ignored ones are still
// running (goleak retries for a while, so teardown may finish first). Call
// it after Env.Close, e.g. in TestMain or after each scenario.
func CheckLeaks(t TB, extra ...goleak.Option) {
	t.Helper()
	if err := goleak.Find(LeakOptions(extra...)...); err != nil {
		t.Errorf("goroutine leak: %v", err)
	}
}

// LeakSnapshot records the goroutines running now; the returned function
// fails t when goroutines started since then are still running. Use it
// around one scenario: check := runtimes.LeakSnapshot(); ...; check(t).
func LeakSnapshot(extra ...goleak.Option) func(t TB) {
	base := goleak.IgnoreCurrent()
	return func(t TB) {
		t.Helper()
		CheckLeaks(t, append([]goleak.Option{base}, extra...)...)
	}
}
