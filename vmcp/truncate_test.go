package vmcp_test

import (
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/faults"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
)

// TestTruncatedAnswer: beta sends the first bytes of its answer and closes
// the connection (fault kind truncate). The gateway ends the call promptly
// (well before the 1s call timeout) with an error naming beta, and alpha and
// beta's next call are unaffected.
func TestTruncatedAnswer(t *testing.T) {
	t.Parallel()
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	g := startGateway(t, gwConfig(faultTimeouts, a, b))
	for _, modern := range []bool{false, true} {
		name := map[bool]string{false: "legacy", true: "modern"}[modern]
		t.Run(name, func(t *testing.T) {
			c := connect(t, g.URL(), modern)
			for _, size := range []fakebackends.Size{1, 40} {
				if err := b.SetFaults(faults.Fault{Kind: faults.KindTruncate, Match: faults.Match{Method: "tools/call", Tool: "echo"}, Params: &faults.Truncate{Size: size}}); err != nil {
					t.Fatal(err)
				}
				res, d := callTool(t, c, "beta_echo", map[string]any{"x": 1})
				text := resultText(res)
				backend, kind := metaOf(res)
				t.Logf("truncate %d bytes: %.1fms %s [kind %s]", size, float64(d.Microseconds())/1000, text, kind)
				if !res.IsError || !strings.HasPrefix(text, `backend "beta" unavailable`) || backend != "beta" {
					t.Errorf("truncate %d: isError %v, text %q, backend %q; want an error naming beta", size, res.IsError, text, backend)
				}
				if kind == "" || kind == "timeout" {
					t.Errorf("truncate %d: error kind %q; want a failure seen at once, not a timeout", size, kind)
				}
				if d >= atOnceBound {
					t.Errorf("truncate %d: took %v", size, d)
				}
				if res, _ := callTool(t, c, "alpha_echo", nil); res.IsError {
					t.Errorf("alpha failed too: %s", resultText(res))
				}
				b.ClearFaults()
				if res, _ := callTool(t, c, "beta_other", nil); res.IsError {
					t.Errorf("beta did not recover: %s", resultText(res))
				}
			}
		})
	}
}
