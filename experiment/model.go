// Package experiment runs chaos experiments against a real deployment: a
// gateway's MCP endpoint and, per backend, the control API of the chaos
// proxy (or fake backend) in front of it. An experiment checks a
// steady-state hypothesis, runs a method (fault actions, pauses, probes
// during faults), checks the hypothesis again and always rolls back,
// verifying that every proxy is clean. Faults are held by leases that the
// runner renews, so a runner that dies leaves nothing behind for longer
// than one lease. The journal is a history.Results document.
package experiment

import (
	"cmp"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// Experiment is one experiment file, decoded strictly (see Parse).
type Experiment struct {
	// Title names the experiment (the journal's scenario name).
	Title string `yaml:"title"`
	// Description says what it shows.
	Description string `yaml:"description,omitempty"`
	// Parameters are substituted for ${name} in every string of the file;
	// `--param name=value` overrides them.
	Parameters map[string]string `yaml:"parameters,omitempty"`
	// Deployment is what the experiment runs against.
	Deployment Deployment `yaml:"deployment"`
	// Safeguards bound the run.
	Safeguards Safeguards `yaml:"safeguards,omitempty"`
	// SteadyState is the hypothesis, checked before and after the method.
	SteadyState SteadyState `yaml:"steadyState"`
	// Method is the sequence of steps run between the two checks.
	Method []Step `yaml:"method,omitempty"`
}

// Deployment is the gateway and the control APIs of its backends.
type Deployment struct {
	// Gateway is the gateway's MCP URL (or kube.gateway names its
	// Service).
	Gateway string `yaml:"gateway,omitempty"`
	// AuthEnv names an environment variable holding a bearer token for
	// the gateway (and its health URL). Tokens never go in the file.
	AuthEnv string `yaml:"authEnv,omitempty"`
	// Protocol is the client revision: legacy (2025-11-25, default) or
	// modern (2026-07-28).
	Protocol string `yaml:"protocol,omitempty"`
	// Health, when set, is where health probes read backend states.
	Health *Health `yaml:"health,omitempty"`
	// Backends are the backends the experiment may act on.
	Backends []Backend `yaml:"backends,omitempty"`
	// AllowHosts lists the non-loopback hosts the experiment may contact;
	// any other non-loopback host is refused before anything runs.
	AllowHosts []string `yaml:"allowHosts,omitempty"`
	// Kube, when set, is the cluster chaos_mesh actions act on, and the
	// namespace of the Services that kube.gateway and backends' service
	// name.
	Kube *Kube `yaml:"kube,omitempty"`
}

// Kube names a Kubernetes cluster and namespace.
type Kube struct {
	// Namespace is where chaos_mesh objects go unless their metadata
	// names one, and where the named Services are.
	Namespace string `yaml:"namespace"`
	// Kubeconfig and Context select the cluster (default: $KUBECONFIG or
	// ~/.kube/config and its current context).
	Kubeconfig string `yaml:"kubeconfig,omitempty"`
	Context    string `yaml:"context,omitempty"`
	// Gateway, instead of deployment.gateway, names the gateway's
	// Service: probes reach it through the API server's service proxy
	// with the kubeconfig's credentials (no port-forward).
	Gateway *KubeService `yaml:"gateway,omitempty"`
	// Image is the fault proxy's image for backends named by service
	// (default: the one chaos kube inject uses).
	Image string `yaml:"image,omitempty"`
}

// KubeService is a Service's MCP endpoint.
type KubeService struct {
	// Service is the Service's name in kube.namespace.
	Service string `yaml:"service"`
	// Port is the Service's port (number; default: its only port).
	Port int `yaml:"port,omitempty"`
	// Path is the MCP path (default /mcp).
	Path string `yaml:"path,omitempty"`
}

// Health maps a gateway's health endpoint.
type Health struct {
	// URL answers JSON with per-backend states (GET), read as
	// targets.ParseBackendStates reads it: backends keyed by name or as a
	// list, state under state/status/health, breaker under
	// breaker/circuitState/...
	URL string `yaml:"url"`
	// StateKey and BreakerKey, when set, name the keys of a backend's
	// object that hold its state and its breaker state (e.g. toolhive's
	// "Status" and "CircuitState"), instead of the usual guesses.
	StateKey   string `yaml:"stateKey,omitempty"`
	BreakerKey string `yaml:"breakerKey,omitempty"`
	// Healthy lists the states that count as healthy for the `healthy`
	// shorthand of a health probe (default healthy, degraded).
	Healthy []string `yaml:"healthy,omitempty"`
}

// Backend is one backend and the control API of the proxy (or fake
// backend) in front of it, or its Service in a cluster.
type Backend struct {
	// Name is how the gateway names the backend (errors, health).
	Name string `yaml:"name"`
	// Control is the base URL of the control API (chaos proxy --admin).
	Control string `yaml:"control,omitempty"`
	// Service, instead of control, names the backend's Service in
	// kube.namespace: an inject action puts the fault proxy in front of
	// it in the cluster (as chaos kube inject does, its Lease renewed by
	// the run), a clear and the rollback take it out (as chaos kube heal
	// does) and check the Service is as it was.
	Service string `yaml:"service,omitempty"`
	// TokenEnv names an environment variable holding the control API's
	// bearer token, if it needs one.
	TokenEnv string `yaml:"tokenEnv,omitempty"`
}

// Safeguards bound a run.
type Safeguards struct {
	// MaxDuration aborts (and rolls back) a run that takes longer
	// (default 10m).
	MaxDuration time.Duration `yaml:"maxDuration,omitempty"`
	// LeaseTTL is the lease asked for every fault set (default 30s); the
	// runner renews it every third of it.
	LeaseTTL time.Duration `yaml:"leaseTTL,omitempty"`
	// CallTimeout is a probe call's deadline unless the probe sets one
	// (default 10s).
	CallTimeout time.Duration `yaml:"callTimeout,omitempty"`
}

// SteadyState is the hypothesis: probes that must all hold.
type SteadyState struct {
	// Title describes the hypothesis.
	Title string `yaml:"title,omitempty"`
	// Probes must all hold, within their tolerance.
	Probes []Probe `yaml:"probes"`
}

// Step is one method step: exactly one of Action, Pause or Probe.
type Step struct {
	Action *Action       `yaml:"action,omitempty"`
	Pause  time.Duration `yaml:"pause,omitempty"`
	Probe  *Probe        `yaml:"probe,omitempty"`
}

// Action types.
const (
	// ActionInject adds faults on a backend's proxy (POST /faults).
	ActionInject = "inject"
	// ActionClear clears a backend's faults (DELETE /faults); backend "*"
	// clears every backend.
	ActionClear = "clear"
	// ActionChaosMesh creates a Chaos Mesh object (PodChaos,
	// NetworkChaos) in deployment.kube's cluster; the rollback deletes it,
	// also after an interrupt.
	ActionChaosMesh = "chaos_mesh"
)

// Action acts on a backend's proxy.
type Action struct {
	// Type is inject or clear.
	Type string `yaml:"type"`
	// Backend names a deployment backend ("*" with clear: all).
	Backend string `yaml:"backend"`
	// Faults are the faults to inject, in the control API's schema (the
	// fake backends' fault schema: kind, parameters, match, schedule).
	Faults []any `yaml:"faults,omitempty"`
	// Duration, when set, clears the backend's faults this long after
	// the injection (the method goes on meanwhile).
	Duration time.Duration `yaml:"duration,omitempty"`
	// Object is the Chaos Mesh object of a chaos_mesh action
	// (apiVersion chaos-mesh.org/v1alpha1, kind PodChaos or NetworkChaos,
	// metadata.name, spec), created as written: Chaos Mesh's CRDs
	// validate it.
	Object map[string]any `yaml:"object,omitempty"`
}

// Probe types.
const (
	// ProbeToolsListed lists the gateway's tools (tools/list).
	ProbeToolsListed = "tools_listed"
	// ProbeCallTool calls a tool through the gateway (tools/call).
	ProbeCallTool = "call_tool"
	// ProbeHealth reads a backend's state from the health URL.
	ProbeHealth = "health"
)

// Probe observes the deployment through the gateway. A probe holds when
// its expectation is met, within its tolerance.
type Probe struct {
	// Name names the probe in progress lines and the journal.
	Name string `yaml:"name"`
	// Type is tools_listed, call_tool or health.
	Type string `yaml:"type"`
	// Property is what the probe judges, from the closed catalogue of
	// history.Properties (e.g. optimizer-excludes-unhealthy): findings
	// group experiments' probes with the scenarios' checks by it. Empty:
	// from the probe (a health probe of the breaker: breaker; of states:
	// health-reports; a call that must name a backend:
	// names-failing-backend; one bounded in time: bounded-by-call-timeout;
	// else by its name, or serves-before-fault).
	Property string `yaml:"property,omitempty"`

	// Tools (tools_listed) are glob patterns (path.Match) that must each
	// match a listed tool; Absent are patterns no listed tool may match.
	Tools  []string `yaml:"tools,omitempty"`
	Absent []string `yaml:"absent,omitempty"`

	// Tool and Arguments (call_tool) are the call.
	Tool      string         `yaml:"tool,omitempty"`
	Arguments map[string]any `yaml:"arguments,omitempty"`
	// Expect (call_tool) is what the answer must look like.
	Expect *Expect `yaml:"expect,omitempty"`
	// Timeout is the call's deadline (default safeguards.callTimeout).
	Timeout time.Duration `yaml:"timeout,omitempty"`
	// Session (tools_listed, call_tool) is fresh (default: a new client
	// session per sample, as a new client would see the gateway) or
	// shared (one session kept for the whole run, opened at its first use:
	// a client that was connected before the fault).
	Session string `yaml:"session,omitempty"`

	// Backend and States (health): the backend's state must be one of
	// States ("healthy" also accepts the deployment's healthy states);
	// Breaker, when set, lists the accepted breaker states.
	Backend string   `yaml:"backend,omitempty"`
	States  []string `yaml:"states,omitempty"`
	Breaker []string `yaml:"breaker,omitempty"`

	// Tolerance says how strictly the probe is judged.
	Tolerance Tolerance `yaml:"tolerance,omitempty"`
}

// Probe sessions.
const (
	SessionFresh  = "fresh"
	SessionShared = "shared"
)

// Outcomes of a call_tool probe: who ended the call, and how.
const (
	// OutcomeOK: the gateway answered a result without isError.
	OutcomeOK = "ok"
	// OutcomeError: the gateway answered an error: a JSON-RPC error, an
	// HTTP error status, or a result with isError.
	OutcomeError = "error"
	// OutcomeDropped: the connection ended (or could not be made)
	// without an answer: EOF, reset, an event stream that ended.
	OutcomeDropped = "dropped"
	// OutcomeTimeout: the probe's own deadline (timeout) ended the call.
	OutcomeTimeout = "timeout"
	// OutcomeAny: an answer, ok or error (not dropped, not timeout): only
	// time and text are judged.
	OutcomeAny = "any"
)

// outcomeWords says an outcome in the words of progress lines, journals
// and reports.
var outcomeWords = map[string]string{
	OutcomeOK:      "a result",
	OutcomeError:   "an answered error",
	OutcomeDropped: "dropped without an answer",
	OutcomeTimeout: "no answer before the probe's own deadline",
	OutcomeAny:     "an answer (a result or an error)",
}

// Expect is what a call_tool answer must look like.
type Expect struct {
	// Outcome is ok (default; error when Names is set), error, dropped,
	// timeout or any (ok or error).
	Outcome string `yaml:"outcome,omitempty"`
	// Within bounds the call's time, whatever its outcome: the call must
	// end within it.
	Within time.Duration `yaml:"within,omitempty"`
	// Names is a backend the error must name (as a whole word, in the
	// text or the result's _meta).
	Names string `yaml:"names,omitempty"`
	// Contains and Lacks are texts the answer's text must contain / must
	// not contain.
	Contains string `yaml:"contains,omitempty"`
	Lacks    string `yaml:"lacks,omitempty"`
}

// Tolerance says how a probe is judged: it runs Samples times and holds
// when at most MaxFailures of them deviate; with Eventually it is retried
// (every RetryEvery) until it holds or Eventually has passed.
type Tolerance struct {
	Samples     int           `yaml:"samples,omitempty"`
	MaxFailures int           `yaml:"maxFailures,omitempty"`
	Eventually  time.Duration `yaml:"eventually,omitempty"`
	RetryEvery  time.Duration `yaml:"retryEvery,omitempty"`
}

// Defaults.
const (
	DefaultMaxDuration = 10 * time.Minute
	DefaultLeaseTTL    = 30 * time.Second
	DefaultCallTimeout = 10 * time.Second
	DefaultRetryEvery  = 250 * time.Millisecond
)

// JudgedProperty is the property the probe judges (see Property).
func (p *Probe) JudgedProperty() history.Property {
	if p.Property != "" {
		return history.Property(p.Property)
	}
	switch {
	case p.Type == ProbeHealth && len(p.Breaker) > 0:
		return history.PropBreaker
	case p.Type == ProbeHealth:
		return history.PropHealth
	case p.Type == ProbeCallTool && p.Expect != nil && p.Expect.Names != "":
		return history.PropNamesBackend
	case p.Type == ProbeCallTool && p.Expect != nil && p.Expect.Within > 0:
		return history.PropBounded
	}
	return cmp.Or(history.PropertyOf(p.Name), history.PropBaseline)
}
