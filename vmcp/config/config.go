// Package config loads and validates the reference vMCP gateway's YAML
// configuration. Decoding is strict: unknown keys, duplicate keys and values
// of the wrong type are errors that name the file, the line and the field.
package config

import (
	"slices"
	"time"
)

// Transport names how the gateway reaches a backend.
type Transport string

// Backend transports.
const (
	TransportStreamableHTTP Transport = "streamable-http"
	TransportSSE            Transport = "sse"
	TransportStdio          Transport = "stdio"
)

// Protocol selects the MCP revision the gateway speaks to a backend.
type Protocol string

// Backend protocol preferences.
const (
	// ProtocolAuto prefers the sessionful 2025-11-25 revision for client
	// sessions that own backend sessions (so session expiry can be detected
	// and repaired) and falls back to the stateless 2026-07-28 revision when
	// the backend refuses initialize. The modern pool negotiates.
	ProtocolAuto Protocol = "auto"
	// ProtocolLegacy pins 2025-11-25 (initialize, Mcp-Session-Id).
	ProtocolLegacy Protocol = "legacy"
	// ProtocolModern uses the stateless 2026-07-28 revision only.
	ProtocolModern Protocol = "modern"
)

// Conflict resolution strategies.
const (
	ConflictPrefix   = "prefix"
	ConflictPriority = "priority"
)

// Incoming authentication types.
const (
	AuthAnonymous = "anonymous"
	AuthBearer    = "bearer"
)

// Defaults applied by Parse.
const (
	DefaultName         = "vmcp"
	DefaultPrefixFormat = "{backend}_"
	DefaultInitialize   = 5 * time.Second
	DefaultCall         = 30 * time.Second
	DefaultList         = 10 * time.Second
	DefaultClose        = 2 * time.Second
	// DefaultSessionIdle: an abandoned session (a client that left without
	// DELETE) holds its backend sessions and a limits.maxSessions slot this
	// long; a client idle longer re-initializes after a 404.
	DefaultSessionIdle      = 10 * time.Minute
	DefaultMaxResponseBytes = 16 << 20
	DefaultPoolSize         = 4
)

// Config is the whole gateway configuration.
type Config struct {
	// File is the path the configuration was read from ("" when parsed from
	// memory); error messages name it.
	File         string       `json:"-"`
	Name         string       `json:"name"`
	Backends     []Backend    `json:"backends"`
	Aggregation  Aggregation  `json:"aggregation"`
	Timeouts     Timeouts     `json:"timeouts"`
	IncomingAuth IncomingAuth `json:"incomingAuth"`
	Limits       Limits       `json:"limits"`
	Pool         Pool         `json:"pool"`
	// Health, Breaker, Metrics, Optimizer and Notifications: see resilience.go.
	Health        Health        `json:"health"`
	Breaker       Breaker       `json:"breaker"`
	Metrics       Metrics       `json:"metrics"`
	Optimizer     Optimizer     `json:"optimizer"`
	Notifications Notifications `json:"notifications"`
}

// Backend is one backend MCP server.
type Backend struct {
	Name      string    `json:"name"`
	URL       string    `json:"url,omitempty"`
	Transport Transport `json:"transport"`
	// Command is the argv of a stdio backend.
	Command []string `json:"command,omitempty"`
	// Env is extra environment for a stdio backend (KEY: value).
	Env map[string]string `json:"env,omitempty"`
	// Headers are sent with every HTTP request to the backend.
	Headers  map[string]string `json:"headers,omitempty"`
	Protocol Protocol          `json:"protocol"`
	// Probe is how the health monitor probes the backend: "list"
	// (tools/list, the default; works on stateless backends), "ping" or
	// "tool:<name>".
	Probe string `json:"probe"`
	// Keepalive probes each client session's connection to the backend.
	Keepalive Keepalive `json:"keepalive"`
	// Line is the line of the backend's entry in the file (0 if unknown).
	Line int `json:"-"`
}

// Aggregation controls how backend capabilities are merged.
type Aggregation struct {
	// ConflictResolution is ConflictPrefix or ConflictPriority.
	ConflictResolution string `json:"conflictResolution"`
	// PrefixFormat contains "{backend}" (or toolhive's "{workload}"),
	// replaced with the backend name, e.g. "{backend}_".
	PrefixFormat string `json:"prefixFormat"`
	// PriorityOrder ranks backends; unlisted backends follow, by name.
	PriorityOrder []string `json:"priorityOrder,omitempty"`
	// Nested is toolhive's spelling (conflictResolutionConfig: {prefixFormat,
	// priorityOrder}); Parse moves it into the fields above and clears it.
	Nested *struct {
		PrefixFormat  string   `json:"prefixFormat"`
		PriorityOrder []string `json:"priorityOrder"`
	} `json:"conflictResolutionConfig,omitempty"`
}

// Timeouts bound every backend interaction.
type Timeouts struct {
	// Initialize bounds connecting to a backend and its handshake.
	Initialize time.Duration `json:"initialize" yaml:"initialize,positive"`
	// Call bounds one tools/call, resources/read or prompts/get.
	Call time.Duration `json:"call" yaml:"call,positive"`
	// List bounds each list request made while building a session's view.
	List time.Duration `json:"list" yaml:"list,positive"`
	// Close bounds closing one backend connection (its DELETE, or a stdio
	// process's graceful exit) before it is cut off.
	Close time.Duration `json:"close" yaml:"close,positive"`
	// SessionIdle closes a client session that sent no request for this
	// long (its id then answers 404, so the client re-initializes).
	SessionIdle time.Duration `json:"sessionIdle" yaml:"sessionIdle,positive"`
}

// IncomingAuth is how clients authenticate to the gateway.
type IncomingAuth struct {
	Type string `json:"type"`
	// TokenEnv names the environment variable holding the bearer token.
	TokenEnv string `json:"tokenEnv,omitempty"`
	// TokenFile names a file holding the bearer token (surrounding
	// whitespace trimmed; a relative path is relative to the configuration
	// file). Exactly one of TokenEnv and TokenFile is required for bearer.
	TokenFile string `json:"tokenFile,omitempty"`
	// AllowNetwork lets an anonymous gateway listen on a non-loopback
	// address. Without it, Start refuses to serve every backend's tools to
	// anyone who can reach the host.
	AllowNetwork bool `json:"allowNetwork,omitempty"`
	// Token is the resolved bearer token (never serialised).
	Token string `json:"-"`
}

// Limits protect the gateway from misbehaving backends.
type Limits struct {
	// MaxResponseBytes caps one backend response message.
	MaxResponseBytes int64 `json:"maxResponseBytes" yaml:"maxResponseBytes,size,positive"`
	// MaxToolsPerBackend refuses a backend whose tools/list holds more
	// tools (the backend is left out of the session with an error saying
	// so; DefaultMaxToolsPerBackend when unset).
	MaxToolsPerBackend int `json:"maxToolsPerBackend" yaml:"maxToolsPerBackend,positive"`
	// MaxSessions caps open client sessions; an initialize beyond it is
	// answered HTTP 503 (DefaultMaxSessions when unset).
	MaxSessions int `json:"maxSessions" yaml:"maxSessions,positive"`
}

// Pool sizes the shared backend client pool used for stateless
// (2026-07-28) clients.
type Pool struct {
	// Size is the maximum number of backend clients per backend.
	Size int `json:"size" yaml:"size,positive"`
}

// Backend returns the backend named name.
func (c *Config) Backend(name string) (Backend, bool) {
	if i := slices.IndexFunc(c.Backends, func(b Backend) bool { return b.Name == name }); i >= 0 {
		return c.Backends[i], true
	}
	return Backend{}, false
}
