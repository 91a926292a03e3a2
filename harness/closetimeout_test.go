package harness

import (
	"testing"
	"time"
)

type slowGateway struct{ Gateway }

func (slowGateway) CloseTimeout() time.Duration { return 45 * time.Second }

type slowBackend struct{ RunningBackend }

func (slowBackend) CloseTimeout() time.Duration { return 30 * time.Second }

// TestEnvCloseTimeout: the teardown bound is the gateway's Close plus the
// slowest backend's (they close one after the other), at least the
// default.
func TestEnvCloseTimeout(t *testing.T) {
	if got := (&Env{}).CloseTimeout(); got != DefaultEnvCloseTimeout {
		t.Fatalf("empty env: %s", got)
	}
	e := &Env{gateway: slowGateway{}, backends: []RunningBackend{nil, slowBackend{}, &inProcessBackend{}}}
	if got, want := e.CloseTimeout(), 75*time.Second; got != want {
		t.Fatalf("CloseTimeout %s, want %s", got, want)
	}
	if closeTimeoutOf(&inProcessBackend{}) != DefaultCloseTimeout {
		t.Fatal("a component without CloseTimeout gets the default")
	}
}
