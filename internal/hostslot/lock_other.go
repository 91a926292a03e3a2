//go:build !unix

package hostslot

import "sync"

// Without flock the slots bound this process only.
var held sync.Map

// tryLock takes path's slot in this process.
func tryLock(path string) (release func(), ok bool, err error) {
	if _, taken := held.LoadOrStore(path, true); taken {
		return nil, false, nil
	}
	return func() { held.Delete(path) }, true, nil
}
