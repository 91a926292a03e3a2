package containers

import "sync"

// owned holds the ids of the containers this process started and has not
// removed yet.
var owned sync.Map

// Owns says whether id (a full container id) names a container this
// process started and has not removed yet. The scenarios' gate counts the
// CPU of its processes as its own: Docker's shim, not this process, is
// their parent.
func Owns(id string) bool {
	_, ok := owned.Load(id)
	return ok
}

// OwnsAny says whether this process has a container it has not removed
// yet.
func OwnsAny() bool {
	found := false
	owned.Range(func(_, _ any) bool { found = true; return false })
	return found
}
