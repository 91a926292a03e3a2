package fakebackends

import "time"

// Transport names how a fake backend is reached.
type Transport string

// Transports a fake backend can serve.
const (
	TransportStreamableHTTP Transport = "streamable-http"
	TransportSSE            Transport = "sse"
	TransportStdio          Transport = "stdio"
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
	// result, ProgressInterval apart.
	Progress         int      `yaml:"progress,omitempty" json:"progress,omitempty"`
	ProgressInterval Duration `yaml:"progressInterval,omitempty" json:"progressInterval,omitempty"`
	// Meta is the tool's _meta in tools/list (e.g. the harness's origin
	// marker).
	Meta map[string]any `yaml:"meta,omitempty" json:"meta,omitempty"`
}

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

// FaultKind names a kind of fault.
type FaultKind string

// Fault kinds.
const (
	KindCrash         FaultKind = "crash"
	KindHTTPStatus    FaultKind = "http_status"
	KindStall         FaultKind = "stall"
	KindLatency       FaultKind = "latency"
	KindJSONRPCError  FaultKind = "jsonrpc_error"
	KindToolError     FaultKind = "tool_error"
	KindMalformed     FaultKind = "malformed"
	KindSessionExpire FaultKind = "session_expire"
	KindFlap          FaultKind = "flap"
)

// Crash modes.
const (
	CrashEOF   = "eof"   // close the connection
	CrashReset = "reset" // close with SO_LINGER 0: the peer sees a TCP RST
	CrashDown  = "down"  // close the listener: connection refused until cleared
)

// Stages at which a crash or stall happens.
const (
	StageBeforeHeaders = "before_headers"
	StageAfterHeaders  = "after_headers"
	StageAfterProgress = "after_progress" // stall only
	StageMidBody       = "mid_body"       // stall only
)

// Malformed variants.
const (
	MalformedInvalidJSON  = "invalid_json"
	MalformedWrongID      = "wrong_id"
	MalformedTruncatedSSE = "truncated_sse"
	MalformedOversized    = "oversized"
)

// Fault is one fault: a kind with its parameters, a match and a schedule.
// Fields that do not belong to the kind are an error.
type Fault struct {
	Kind FaultKind `yaml:"kind" json:"kind"`

	// crash
	Mode     string `yaml:"mode,omitempty" json:"mode,omitempty"`         // eof (default) | reset | down
	Exit     bool   `yaml:"exit,omitempty" json:"exit,omitempty"`         // process mode only: exit the process
	ExitCode int    `yaml:"exitCode,omitempty" json:"exitCode,omitempty"` // default 1
	// crash (before_headers default | after_headers) and stall (all four stages; default before_headers)
	Stage string `yaml:"stage,omitempty" json:"stage,omitempty"`

	// http_status
	Status  int               `yaml:"status,omitempty" json:"status,omitempty"`
	Body    *FaultBody        `yaml:"body,omitempty" json:"body,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`

	// stall: how many progress notifications come before an after_progress stall (default 1)
	Progress int `yaml:"progress,omitempty" json:"progress,omitempty"`

	// latency
	Delay  Duration `yaml:"delay,omitempty" json:"delay,omitempty"`
	Jitter Duration `yaml:"jitter,omitempty" json:"jitter,omitempty"`

	// jsonrpc_error
	Code    int    `yaml:"code,omitempty" json:"code,omitempty"`
	Message string `yaml:"message,omitempty" json:"message,omitempty"`

	// tool_error
	Text string `yaml:"text,omitempty" json:"text,omitempty"`

	// malformed
	Variant string `yaml:"variant,omitempty" json:"variant,omitempty"`
	Size    Size   `yaml:"size,omitempty" json:"size,omitempty"` // oversized body size, e.g. 2MiB

	// flap: Fault is on for On, then off for Off, repeating.
	On    Duration `yaml:"on,omitempty" json:"on,omitempty"`
	Off   Duration `yaml:"off,omitempty" json:"off,omitempty"`
	Fault *Fault   `yaml:"fault,omitempty" json:"fault,omitempty"`

	// match and schedule
	Match       Match    `yaml:"match,omitempty" json:"match,omitempty"`
	After       int      `yaml:"after,omitempty" json:"after,omitempty"`             // skip the first N matching requests
	Count       int      `yaml:"count,omitempty" json:"count,omitempty"`             // apply to N requests; 0 = unlimited
	Probability *float64 `yaml:"probability,omitempty" json:"probability,omitempty"` // 0..1; nil = always
	Seed        int64    `yaml:"seed,omitempty" json:"seed,omitempty"`
	At          Duration `yaml:"at,omitempty" json:"at,omitempty"`   // active from this long after the fault is set
	For         Duration `yaml:"for,omitempty" json:"for,omitempty"` // active for this long (0 = until cleared)

	// Line is the script line the fault starts on (0 when not from a file).
	Line int `yaml:"-" json:"-"`
}

// FaultBody is the body of an http_status fault: exactly one of Text, JSON
// (for example a JSON-RPC error object) or Raw (bytes sent as they are).
type FaultBody struct {
	Text string `yaml:"text,omitempty" json:"text,omitempty"`
	JSON any    `yaml:"json,omitempty" json:"json,omitempty"`
	Raw  string `yaml:"raw,omitempty" json:"raw,omitempty"`
}

// Match selects the requests a fault applies to. Empty fields match all.
type Match struct {
	Method string `yaml:"method,omitempty" json:"method,omitempty"`
	Tool   string `yaml:"tool,omitempty" json:"tool,omitempty"` // glob (path.Match) on the tool, prompt or resource name
}

// Duration is a time.Duration written as a Go duration string ("250ms").
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Size is a byte count written as an integer or with a unit (KB, KiB, MB, MiB).
type Size int64
