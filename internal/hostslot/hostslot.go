// Package hostslot bounds how many pieces of one kind of work run at once
// on this host, across processes: two test suites or chaos runs side by
// side share the bound. A slot is an flock(2)ed file in a directory under
// the system's temporary directory; the kernel releases it when its holder
// exits, killed or not, so a dead owner never keeps a slot.
package hostslot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Dir is where the slot files live: one file per slot, never removed
// (they are empty; a lock, not a file, is the slot).
func Dir() string { return filepath.Join(os.TempDir(), "vmcp-chaos-slots") }

// poll is how often a waiting Acquire tries the slots again.
const poll = 50 * time.Millisecond

// Acquire takes one of n slots named kind (n < 1 counts as 1), waiting
// until one is free or ctx ends (then it returns ctx's cause). release
// gives the slot back; call it exactly once.
func Acquire(ctx context.Context, kind string, n int) (release func(), err error) {
	n = max(n, 1)
	if err := os.MkdirAll(Dir(), 0o777); err != nil {
		return nil, fmt.Errorf("host slots: %w", err)
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		for i := range n {
			path := filepath.Join(Dir(), fmt.Sprintf("%s-%d.lock", kind, i))
			release, ok, err := tryLock(path)
			if err != nil {
				return nil, fmt.Errorf("host slot %s: %w", path, err)
			}
			if ok {
				return release, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for one of %d host slots %q: %w", n, kind, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// RemoveKind removes the slot files of kind (for a kind made up for one
// run, such as a test's, once nothing holds its slots).
func RemoveKind(kind string) {
	files, _ := filepath.Glob(filepath.Join(Dir(), kind+"-*.lock"))
	for _, f := range files {
		_ = os.Remove(f)
	}
}
