package kit

import (
	"context"
	"fmt"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
)

// logReads is how many times ReadLog asks for a backend's log before it
// gives up, logRetry apart.
const (
	logReads = 3
	logRetry = 100 * time.Millisecond
)

// ReadLog is backend's request log (a copy). A read that fails is tried
// again (logReads times in all); when none succeeds the scenario ends
// inconclusive (a *HarnessError, recovered by the runner): a log the
// harness could not read, taken as empty, would be read as "nothing
// arrived at the backend", a verdict on the gateway from the harness's
// own failure.
func ReadLog(ctx context.Context, env *harness.Env, backend string) []fakebackends.RequestRecord {
	b := env.Backend(backend)
	if b == nil {
		panic(&HarnessError{Action: fmt.Sprintf("read %s's request log", backend), Where: where(), Err: fmt.Errorf("no backend %q in the topology", backend)})
	}
	var err error
	for i := range logReads {
		var reqs []fakebackends.RequestRecord
		if reqs, err = b.Requests(ctx); err == nil {
			return reqs
		}
		if i < logReads-1 {
			Sleep(ctx, logRetry)
		}
	}
	panic(&HarnessError{Action: fmt.Sprintf("read %s's request log (%d tries)", backend, logReads), Where: where(), Err: err})
}

// BackendLog is ReadLog for the kit's scenario.
func (k *Kit) BackendLog(backend string) []fakebackends.RequestRecord {
	return ReadLog(k.Ctx, k.Env, backend)
}

// where is the scenario's file:line that called into the kit, and ": ",
// or "" when none is on the stack.
func where() string {
	if w := scenarioLine(); w != "" {
		return w + ": "
	}
	return ""
}
