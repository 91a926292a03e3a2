// Package targets is what is under test: the gateway targets (Exec,
// Reference), their profiles, config templates and tool names, and the
// health and session state APIs they are read through.
package targets

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// Capability is something a gateway under test offers beyond MCP. A
// scenario that needs a capability the target lacks is skipped with that
// reason, never passed.
type Capability string

// Capabilities a target may declare.
const (
	// CapHealthAPI: GET /api/backends/health reports per-backend health
	// (and breaker state when CapBreaker).
	CapHealthAPI Capability = "health-api"
	// CapSessionAPI: GET /api/sessions/{id} reports per-backend state in a
	// session.
	CapSessionAPI Capability = "session-api"
	// CapOptimizer: the find_tool / call_tool optimizer tools.
	CapOptimizer Capability = "optimizer"
	// CapMetrics: Prometheus metrics at GET /metrics.
	CapMetrics Capability = "metrics"
	// CapKeepalive: the gateway probes idle backend sessions.
	CapKeepalive Capability = "keepalive"
	// CapBreaker: a per-backend circuit breaker.
	CapBreaker Capability = "breaker"
	// CapReinitOn404 is a promise rather than a feature: the gateway
	// answers a backend's 404 for its session (the backend restarted or
	// expired it) by re-initializing and retrying, so a restart of a
	// streamable-HTTP backend costs no failed call. No scenario needs it;
	// a target that declares it is held to zero failed calls where
	// otherwise one is allowed.
	CapReinitOn404 Capability = "reinit-on-404"
)

// AllCapabilities lists every known capability.
var AllCapabilities = Capabilities{CapHealthAPI, CapSessionAPI, CapOptimizer, CapMetrics, CapKeepalive, CapBreaker, CapReinitOn404}

// Capabilities is a set of capabilities.
type Capabilities []Capability

// Has reports whether c is in the set.
func (cs Capabilities) Has(c Capability) bool { return slices.Contains(cs, c) }

// Missing returns the capabilities of need that are not in the set, in
// order.
func (cs Capabilities) Missing(need ...Capability) Capabilities {
	return slices.DeleteFunc(slices.Clone(need), cs.Has)
}

// String renders the set as "a,b,c".
func (cs Capabilities) String() string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, ",")
}

// ParseCapabilities reads a comma-separated list such as
// "health-api,session-api" (the form of a CLI flag). "all" means every
// capability; unknown names are an error. None is an empty list, not nil.
func ParseCapabilities(s string) (Capabilities, error) {
	out := Capabilities{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
			continue
		case f == "all":
			return slices.Clone(AllCapabilities), nil
		case AllCapabilities.Has(Capability(f)):
			if !out.Has(Capability(f)) {
				out = append(out, Capability(f))
			}
		default:
			return nil, fmt.Errorf("unknown capability %q (want one of %s, or all)", f, AllCapabilities)
		}
	}
	return out, nil
}

// TopologyInfo is what a Target learns about the backends when it starts.
type TopologyInfo struct {
	// Backends are the started backends, in topology order.
	Backends []runtimes.BackendInfo
	// CallTimeout is the per-call backend timeout the gateway should be
	// configured with (Topology.GatewayCallTimeout; default
	// DefaultGatewayCallTimeout).
	CallTimeout time.Duration
	// Features are the optional gateway features to configure
	// (Topology.Features).
	Features runtimes.Features
}

// DefaultGatewayCallTimeout is the backend call timeout gateways are
// configured with unless the topology says otherwise.
const DefaultGatewayCallTimeout = 5 * time.Second

// GatewayCallTimeout is CallTimeout, or DefaultGatewayCallTimeout when it
// is not positive: what a target configures its gateway with.
func (t TopologyInfo) GatewayCallTimeout() time.Duration {
	if t.CallTimeout > 0 {
		return t.CallTimeout
	}
	return DefaultGatewayCallTimeout
}

// Target is a gateway under test: the reference vMCP in-process, any
// gateway binary (Exec), or a test-only mutant.
type Target interface {
	// Name names the target in results, e.g. "reference" or "toolhive".
	Name() string
	// Capabilities is what the target offers beyond MCP.
	Capabilities() Capabilities
	// Start starts a gateway in front of the backends and returns once it
	// is ready. ctx bounds only the start.
	Start(ctx context.Context, topo TopologyInfo) (Gateway, error)
}

// Gateway is one running gateway.
type Gateway interface {
	// MCPURL is the MCP endpoint clients connect to.
	MCPURL() string
	// BaseURL is the scheme://host:port the admin APIs (/status,
	// /api/...) are under.
	BaseURL() string
	// Close stops the gateway. It returns within ctx (and a default
	// deadline) even when the gateway hangs.
	Close(ctx context.Context) error
}
