package history

import "time"

// EventKind is the kind of a timeline event.
type EventKind string

// Event kinds.
const (
	// EventCall is one client call (Event.Call).
	EventCall EventKind = "call"
	// EventFault is a fault injected or cleared, or a signal sent
	// (Event.Fault).
	EventFault EventKind = "fault"
	// EventTransition is an observed health, breaker or session state
	// change (Event.Transition).
	EventTransition EventKind = "transition"
	// EventNote is free text from the scenario (Event.Note).
	EventNote EventKind = "note"
)

// Event is one entry of a scenario's timeline. Exactly one of Call, Fault,
// Transition and Note is set, as Kind says.
type Event struct {
	// Seq numbers events in the order they were recorded.
	Seq int `json:"seq"`
	// Kind says which field below is set.
	Kind EventKind `json:"kind"`
	// At is the monotonic offset from the recorder's start (for a call,
	// when it started).
	At Millis `json:"atMs"`
	// Call is set for EventCall.
	Call *CallRecord `json:"call,omitempty"`
	// Fault is set for EventFault.
	Fault *FaultRecord `json:"fault,omitempty"`
	// Transition is set for EventTransition.
	Transition *TransitionRecord `json:"transition,omitempty"`
	// Note is set for EventNote.
	Note string `json:"note,omitempty"`
}

// Outcome classifies how a client call ended.
type Outcome string

// Outcomes.
const (
	// OutcomeOK: a normal result.
	OutcomeOK Outcome = "ok"
	// OutcomeToolError: an isError tool result that does not say a
	// backend is unavailable (the backend's own tool error).
	OutcomeToolError Outcome = "tool_error"
	// OutcomeBackendUnavailable: an isError result or an error naming the
	// backend as unavailable (`backend "x" unavailable: ...`).
	OutcomeBackendUnavailable Outcome = "backend_unavailable"
	// OutcomeError: any other error.
	OutcomeError Outcome = "error"
	// OutcomeTimeout: the client's deadline ended the call.
	OutcomeTimeout Outcome = "timeout"
	// OutcomeDropped: the connection ended without an answer (EOF, reset,
	// an event stream that ended): the gateway dropped the call.
	OutcomeDropped Outcome = "dropped"
)

// CallRecord is one recorded client call.
type CallRecord struct {
	// Client names the client that made it (e.g. "c1").
	Client string `json:"client,omitempty"`
	// Revision is the client's protocol revision (legacy or modern).
	Revision Revision `json:"revision,omitempty"`
	// Protocol is the protocol version the gateway agreed with the client
	// (it may be older than the revision asked for).
	Protocol string `json:"protocol,omitempty"`
	// Session is the client's MCP session id (legacy only).
	Session string `json:"session,omitempty"`
	// Method is the MCP method, e.g. tools/call.
	Method string `json:"method"`
	// Target is the tool name, resource URI or prompt name.
	Target string `json:"target,omitempty"`
	// Backend is the backend the gateway named: from _meta
	// "vmcp/backend", else from an error text `backend "x" unavailable`.
	Backend string `json:"backend,omitempty"`
	// Outcome classifies the end of the call.
	Outcome Outcome `json:"outcome"`
	// IsError is set when the tool result had isError: true.
	IsError bool `json:"isError,omitempty"`
	// Error is the error text (or the isError result's text).
	Error string `json:"error,omitempty"`
	// ErrorKind is _meta "vmcp/errorKind" when present.
	ErrorKind string `json:"errorKind,omitempty"`
	// Meta is the result's _meta.
	Meta map[string]any `json:"meta,omitempty"`
	// Start and End are monotonic offsets from the recorder's start.
	Start Millis `json:"startMs"`
	End   Millis `json:"endMs"`
	// Duration is End - Start.
	Duration Millis `json:"durationMs"`
	// Timeout is the deadline the call had.
	Timeout Millis `json:"timeoutMs,omitempty"`
	// HTTPStatus is the HTTP status of the POST that carried the
	// request (0 when no response came).
	HTTPStatus int `json:"httpStatus,omitempty"`
	// RPCCode is the JSON-RPC error code of the answer, when the gateway
	// answered the request's id with an error.
	RPCCode *int `json:"rpcCode,omitempty"`
	// Unanswered says, from the wire, why an error was no answer at all:
	// "dropped" (the connection or stream ended before an answer to the
	// request's id) or "refused" (no connection); "" for an answer.
	Unanswered string `json:"unanswered,omitempty"`
	// ForeignAnswer is set when the call succeeded on an answer that
	// carried another request's id and none carried its own: the client
	// took a forged answer the gateway passed on.
	ForeignAnswer bool `json:"foreignAnswer,omitempty"`
	// Forged is set when the call succeeded with a fake backend's answer
	// to another request as its content (faults.ForgedText, the answer of
	// id faults.ForgedID no request has; faults.WrongIDText, the wrong_id
	// variant's): the gateway took another request's answer for the
	// call's and returned it as its own.
	Forged bool `json:"forged,omitempty"`
	// NotOffered says why the gateway does not offer the call's method
	// to the client's session: it did not advertise the method's family
	// at initialize, or (resources, prompts) it answered -32601, method
	// not found. "" when it offers it. A check whose evidence is such a
	// call is not applicable.
	NotOffered string `json:"notOffered,omitempty"`
	// Marker is the unique _meta marker the call carried
	// (faults.MarkerKey): a backend's request log names it when the
	// gateway forwarded it.
	Marker string `json:"marker,omitempty"`
}

// Took returns the call's duration.
func (c *CallRecord) Took() time.Duration { return c.Duration.D() }

// FaultRecord is one fault action on a backend.
type FaultRecord struct {
	// Backend is the backend acted on.
	Backend string `json:"backend"`
	// Action is set, inject, clear, kill, pause, resume, restart, respawn
	// or expire.
	Action string `json:"action"`
	// Kinds are the fault kinds set or injected (e.g. ["http_status"]).
	Kinds []string `json:"kinds,omitempty"`
	// Detail describes the faults (e.g. "http_status 403 tools/call").
	Detail string `json:"detail,omitempty"`
	// Error is set when the action failed.
	Error string `json:"error,omitempty"`
	// Duration is how long the action took (the event's At is when it
	// started).
	Duration Millis `json:"durationMs,omitempty"`
}

// TransitionRecord is one observed state change.
type TransitionRecord struct {
	// Backend is the backend whose state changed.
	Backend string `json:"backend"`
	// Aspect is what changed: "health", "breaker" or "session".
	Aspect string `json:"aspect"`
	// From and To are the states ("" for unknown or first seen).
	From string `json:"from"`
	To   string `json:"to"`
	// Source says where it was observed, e.g. "GET /api/backends/health".
	Source string `json:"source,omitempty"`
}
