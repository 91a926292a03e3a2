package containers

import (
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
)

// TestDownAt: the exit time is the engine's FinishedAt of a container that
// is down; a running, paused or restarting one, one that never exited and
// an unreadable time are errors that say which.
func TestDownAt(t *testing.T) {
	t.Parallel()
	at, err := downAt(&container.State{Status: "exited", FinishedAt: "2026-11-26T21:05:03.123456789Z"})
	if want := time.Date(2026, 11, 26, 21, 5, 3, 123456789, time.UTC); err != nil || !at.Equal(want) {
		t.Errorf("exited: %s, %v; want %s", at, err, want)
	}
	for name, tc := range map[string]struct {
		st   container.State
		want string
	}{
		"running":    {container.State{Status: "running", Running: true, FinishedAt: "2026-11-26T21:05:03Z"}, "not down (status running)"},
		"paused":     {container.State{Status: "paused", Running: true, Paused: true}, "not down (status paused)"},
		"restarting": {container.State{Status: "restarting", Restarting: true}, "not down (status restarting)"},
		"never":      {container.State{Status: "created", FinishedAt: "0001-01-01T00:00:00Z"}, "no exit recorded"},
		"garbled":    {container.State{Status: "exited", FinishedAt: "yesterday"}, `FinishedAt "yesterday"`},
	} {
		if at, err := downAt(&tc.st); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %s, %v; want an error saying %q", name, at, err, tc.want)
		}
	}
}
