//go:build !unix

package hostslot

import "errors"

// Holders is not known without flock: it always fails.
func Holders(kind string) ([]int, error) { return nil, errors.ErrUnsupported }
