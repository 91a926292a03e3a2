package harness

import (
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

type slowGateway struct{ targets.Gateway }

func (slowGateway) CloseTimeout() time.Duration { return 45 * time.Second }

type slowBackend struct{ runtimes.RunningBackend }

func (slowBackend) CloseTimeout() time.Duration { return 30 * time.Second }

type plainBackend struct{ runtimes.RunningBackend }

// TestEnvCloseTimeout: the teardown bound is the gateway's Close plus the
// slowest backend's (they close one after the other), at least the
// default.
func TestEnvCloseTimeout(t *testing.T) {
	if got := (&Env{}).CloseTimeout(); got != DefaultEnvCloseTimeout {
		t.Fatalf("empty env: %s", got)
	}
	e := &Env{gateway: slowGateway{}, backends: []runtimes.RunningBackend{nil, slowBackend{}, plainBackend{}}}
	if got, want := e.CloseTimeout(), 75*time.Second; got != want {
		t.Fatalf("CloseTimeout %s, want %s", got, want)
	}
	if runtimes.CloseTimeoutOf(plainBackend{}) != runtimes.DefaultCloseTimeout {
		t.Fatal("a component without CloseTimeout gets the default")
	}
}
