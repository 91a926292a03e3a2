// Package inject puts the MCP-aware fault proxy (chaos proxy) in front of a
// Kubernetes Service and takes it out again. An injection is a set of
// objects in the Service's namespace, all owned by one anchor ConfigMap
// that also holds the Service as it was: a shadow Service that selects the
// original pods, the proxy's Deployment, ServiceAccount, Role and
// RoleBinding, and a coordination.k8s.io Lease that the CLI renews. The
// Service itself is changed in two places only (its selector, now the
// proxy's pods, and one annotation). Heal restores the Service and deletes
// the rest; the proxy does the same by itself when the Lease is no longer
// renewed (Guard), so a CLI that dies leaves nothing broken.
package inject

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Labels and annotations of an injection.
const (
	// LabelInjection, on every object of an injection and on the proxy's
	// pods, names the injection (the proxy's pods are selected by it).
	LabelInjection = "vmcp-chaos.dev/injection"
	// LabelManagedBy marks every object an injection creates.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is LabelManagedBy's value.
	ManagedBy = "vmcp-chaos"
	// AnnotationInjected, on the Service while it is injected, names the
	// injection.
	AnnotationInjected = "vmcp-chaos.dev/injected-by"
)

// Keys of the anchor ConfigMap's data.
const (
	keyService  = "service.json"  // the Service as it was, JSON
	keyFaults   = "faults.yaml"   // the faults, as the proxy's control API takes them
	keyUpstream = "upstream"      // the shadow Service's URL
	keyListen   = "listen"        // the proxy's MCP listen address
	keyLease    = "leaseDuration" // the Lease's duration, as Go writes durations
)

// Names are the names of an injection's objects, all in the Service's
// namespace.
type Names struct {
	// Service is the injected Service.
	Service string
	// Injection names the anchor ConfigMap, the Lease, the proxy's
	// Deployment, ServiceAccount, Role and RoleBinding.
	Injection string
	// Shadow is the Service that selects the original pods.
	Shadow string
}

// NamesFor returns the names of the injection of service, or an error
// when they would not be valid object names (too long).
func NamesFor(service string) (Names, error) {
	n := Names{Service: service, Injection: "vmcp-chaos-" + service, Shadow: "vmcp-chaos-origin-" + service}
	for _, name := range []string{n.Injection, n.Shadow} {
		if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
			return Names{}, fmt.Errorf("kube inject: service %q: the injection's object %q would be invalid: %v (a Service name of at most %d characters can be injected)",
				service, name, errs, validation.DNS1035LabelMaxLength-len("vmcp-chaos-origin-"))
		}
	}
	return n, nil
}
