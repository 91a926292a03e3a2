package fakebackends

import (
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/strictyaml"
)

// Transport names how a fake backend is reached.
type Transport = faults.Transport

// Transports a fake backend can serve.
const (
	TransportStreamableHTTP = faults.TransportStreamableHTTP
	TransportSSE            = faults.TransportSSE
	TransportStdio          = faults.TransportStdio
)

// Protocol names the MCP protocol revision(s) a fake backend serves.
type Protocol string

// Protocol revisions.
const (
	// ProtocolLegacy serves 2025-11-25: initialize, Mcp-Session-Id, real
	// (remembered) sessions, so a restart or expiry makes old ids answer 404.
	ProtocolLegacy Protocol = "legacy"
	// ProtocolModern serves only the stateless 2026-07-28 revision.
	ProtocolModern Protocol = "modern"
	// ProtocolAuto serves both, as mcp-go does by default.
	ProtocolAuto Protocol = "auto"
)

// Script is the whole behaviour of one fake backend: what it serves and how
// it fails. It is decoded strictly from YAML (or JSON) by ParseScript.
type Script struct {
	Name      string    `yaml:"name" json:"name"`
	Transport Transport `yaml:"transport,omitempty" json:"transport,omitempty"` // default streamable-http
	Protocol  Protocol  `yaml:"protocol,omitempty" json:"protocol,omitempty"`   // default auto
	// Listen is the MCP address (default 127.0.0.1:0). Ignored for stdio.
	Listen string `yaml:"listen,omitempty" json:"listen,omitempty"`
	// Admin is the control API address (default 127.0.0.1:0).
	Admin string `yaml:"admin,omitempty" json:"admin,omitempty"`
	// Seed seeds latency jitter and fault probabilities that set no seed of
	// their own (default 1, so runs repeat).
	Seed              int64              `yaml:"seed,omitempty" json:"seed,omitempty"`
	Tools             []ToolSpec         `yaml:"tools,omitempty" json:"tools,omitempty"`
	Resources         []ResourceSpec     `yaml:"resources,omitempty" json:"resources,omitempty"`
	ResourceTemplates []ResourceTemplate `yaml:"resourceTemplates,omitempty" json:"resourceTemplates,omitempty"`
	Prompts           []PromptSpec       `yaml:"prompts,omitempty" json:"prompts,omitempty"`
	Faults            []Fault            `yaml:"faults,omitempty" json:"faults,omitempty"`
}

// ToolSpec declares one tool.
type ToolSpec struct {
	Name        string         `yaml:"name" json:"name"`
	Description string         `yaml:"description,omitempty" json:"description,omitempty"`
	Input       map[string]any `yaml:"input,omitempty" json:"input,omitempty"` // JSON schema; default {type: object}
	Result      ToolResult     `yaml:"result,omitempty" json:"result,omitempty"`
	Delay       Duration       `yaml:"delay,omitempty" json:"delay,omitempty"`
	// Progress is how many progress notifications the tool sends before its
	// result, ProgressInterval apart (at most MaxProgress; the tool stops
	// when the client leaves).
	Progress         int      `yaml:"progress,omitempty" json:"progress,omitempty"`
	ProgressInterval Duration `yaml:"progressInterval,omitempty" json:"progressInterval,omitempty"`
	// Meta is the tool's _meta in tools/list (e.g. the harness's origin
	// marker).
	Meta map[string]any `yaml:"meta,omitempty" json:"meta,omitempty"`
}

// MaxProgress bounds a tool's progress count: enough for any test, and a
// typo such as 1000000000 would otherwise keep a core busy for many minutes.
// (A stall fault's progress has its own bound, in package faults.)
const MaxProgress = 10_000

// ToolResult is what a tool returns: the scalar `echo` (its arguments as JSON
// text; the default), `{text: "..."}` or `{json: {...}}`.
type ToolResult struct {
	Echo bool   `json:"-"`
	Text string `json:"text,omitempty"`
	JSON any    `json:"json,omitempty"`
}

// ResourceSpec declares one static resource.
type ResourceSpec struct {
	URI      string `yaml:"uri" json:"uri"`
	Name     string `yaml:"name,omitempty" json:"name,omitempty"`
	MimeType string `yaml:"mimeType,omitempty" json:"mimeType,omitempty"`
	Text     string `yaml:"text,omitempty" json:"text,omitempty"`
	// Description and Meta are the resource's description and _meta in
	// resources/list.
	Description string         `yaml:"description,omitempty" json:"description,omitempty"`
	Meta        map[string]any `yaml:"meta,omitempty" json:"meta,omitempty"`
}

// ResourceTemplate declares a resource template; reads of matching URIs
// return Text.
type ResourceTemplate struct {
	URITemplate string `yaml:"uriTemplate" json:"uriTemplate"`
	Name        string `yaml:"name,omitempty" json:"name,omitempty"`
	MimeType    string `yaml:"mimeType,omitempty" json:"mimeType,omitempty"`
	Text        string `yaml:"text,omitempty" json:"text,omitempty"`
}

// PromptSpec declares one prompt returning Text as a single user message.
type PromptSpec struct {
	Name        string      `yaml:"name" json:"name"`
	Description string      `yaml:"description,omitempty" json:"description,omitempty"`
	Arguments   []PromptArg `yaml:"arguments,omitempty" json:"arguments,omitempty"`
	Text        string      `yaml:"text,omitempty" json:"text,omitempty"`
	// Meta is the prompt's _meta in prompts/list.
	Meta map[string]any `yaml:"meta,omitempty" json:"meta,omitempty"`
}

// PromptArg declares a prompt argument.
type PromptArg struct {
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	Required    bool   `yaml:"required,omitempty" json:"required,omitempty"`
}

// Fault kinds, their parameters and the fault engine live in package
// faults (one file per kind); these aliases keep scripts, the control API
// and Go callers unchanged.
type (
	// Fault is one fault: a kind with its parameters, a match and a schedule.
	Fault = faults.Fault
	// Match selects the requests a fault applies to.
	Match = faults.Match
	// Duration is a time.Duration written as a Go duration string ("250ms").
	Duration = strictyaml.Duration
	// Size is a byte count written as an integer or with a unit (KB, KiB, MB, MiB).
	Size = strictyaml.Size
)
