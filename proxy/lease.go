package proxy

import "github.com/vmcp-chaos/vmcp-chaos/faults/control"

// Lease defaults (the control APIs' own).
const (
	// DefaultLeaseTTL is the lease of faults set without a ttl.
	DefaultLeaseTTL = control.DefaultLeaseTTL
	// DefaultMaxLeaseTTL bounds any lease.
	DefaultMaxLeaseTTL = control.DefaultMaxLeaseTTL
)

// LeaseStatus is the control API's view of the lease.
type LeaseStatus = control.LeaseStatus
