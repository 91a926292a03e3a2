package experiment

import (
	"errors"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/internal/fuzzseed"
)

// FuzzParseExperiment: the experiment decoder never panics; every error is
// an *Error naming the file; an accepted experiment has a gateway, at
// least one method step, and safeguards with positive bounds.
func FuzzParseExperiment(f *testing.F) {
	// The shipped experiments, their parameters inlined, cut into seeds of
	// one field each, under 256 bytes (fuzzseed): from the whole 2-3 kB
	// files, plain go test -fuzz minimized its first new input for the
	// whole minute.
	for _, seed := range fuzzseed.Glob("../experiments/*.yaml", fuzzseed.Inline, "title") {
		f.Add(seed)
	}
	for _, s := range []string{
		"title: t\ndeployment: {gateway: 'http://127.0.0.1:1/mcp'}\nmethod: [{probe: {type: list_tools}}]\nsafeguards: {callTimeout: 1ns}\n",
		"title: t\nparams: {a: 1}\ndeployment: {gateway: '${a}'}\n",
		"title: &a [*a]\n", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := Parse(data, "e.yaml", nil)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.File != "e.yaml" || pe.Msg == "" {
				t.Fatalf("error %q (%T) is not an *Error naming e.yaml", err, err)
			}
			return
		}
		if e.Deployment.Gateway == "" || len(e.Method) == 0 {
			t.Fatalf("accepted without a gateway or a method: %+v", e)
		}
		if s := e.Safeguards; s.MaxDuration <= 0 || s.LeaseTTL <= 0 || s.CallTimeout <= 0 {
			t.Fatalf("accepted with safeguards %+v", s)
		}
	})
}
