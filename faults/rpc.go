package faults

import (
	"cmp"
	"encoding/json"
	"strconv"
)

// Message is what the fault engine needs to know of a JSON-RPC message.
type Message struct {
	Method string
	ID     json.RawMessage // nil for notifications and unparsable input
	Name   string          // tool or prompt name, or resource URI
	// ProgressToken is the request's _meta.progressToken, if any.
	ProgressToken json.RawMessage
	// Modern reports a request of the stateless 2026-07-28 revision.
	Modern bool
	// Marker is the request's _meta "vmcp-chaos/marker": the harness marks
	// every call it judges, so a backend's log can say which call arrived.
	Marker string
	// Cancels is the id of the request a notifications/cancelled names
	// (its params.requestId), as JSON; nil for other messages.
	Cancels json.RawMessage
}

// MarkerKey is the _meta key of the marker a harness call carries.
const MarkerKey = "vmcp-chaos/marker"

// ParseMessage reads the method, id and addressed name of a JSON-RPC message. It
// never fails: unparsable input yields an empty message.
func ParseMessage(body []byte) Message {
	var raw struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
		Params struct {
			Name      string          `json:"name"`
			URI       string          `json:"uri"`
			RequestID json.RawMessage `json:"requestId"`
			Meta      struct {
				ProgressToken json.RawMessage `json:"progressToken"`
				Protocol      string          `json:"io.modelcontextprotocol/protocolVersion"`
				Marker        json.RawMessage `json:"vmcp-chaos/marker"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &raw) != nil {
		return Message{}
	}
	m := Message{Method: raw.Method, ID: raw.ID, Name: cmp.Or(raw.Params.Name, raw.Params.URI), ProgressToken: raw.Params.Meta.ProgressToken, Marker: marker(raw.Params.Meta.Marker)}
	if string(m.ID) == "null" {
		m.ID = nil
	}
	if m.Method == "notifications/cancelled" && len(raw.Params.RequestID) > 0 && string(raw.Params.RequestID) != "null" {
		m.Cancels = raw.Params.RequestID
	}
	return m
}

// maxMarker bounds a logged marker: the harness's are short.
const maxMarker = 128

// marker is a _meta marker when it is a string of at most maxMarker bytes,
// else "" (anything else is not the harness's).
func marker(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil || len(s) > maxMarker {
		return ""
	}
	return s
}

// IDOr returns the id as JSON, or null.
func (m Message) IDOr() json.RawMessage {
	if len(m.ID) == 0 {
		return json.RawMessage("null")
	}
	return m.ID
}

// wrongID returns an id that is certainly not the request's.
func (m Message) wrongID() json.RawMessage {
	if n, err := strconv.ParseInt(string(m.ID), 10, 64); err == nil {
		return json.RawMessage(strconv.FormatInt(n+100000, 10))
	}
	b, _ := json.Marshal("wrong-" + string(m.ID))
	return b
}

// ProgressNotification is a notifications/progress message for the request.
func (m Message) ProgressNotification(i, total int) []byte {
	token := m.ProgressToken
	if len(token) == 0 || string(token) == "null" {
		token = json.RawMessage(`"fake-progress"`)
	}
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"method":  "notifications/progress",
		"params":  map[string]any{"progressToken": token, "progress": i, "total": total},
	})
	return b
}

// ErrorResponse is a JSON-RPC error response to m.
func (m Message) ErrorResponse(code int, message string) []byte {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": m.IDOr(),
		"error": map[string]any{"code": code, "message": message},
	})
	return b
}

// ToolErrorResponse is a tools/call result with isError: true.
func (m Message) ToolErrorResponse(text string) []byte {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": m.IDOr(),
		"result": m.result(map[string]any{
			"content": []any{map[string]any{"type": "text", "text": text}},
			"isError": true,
		}),
	})
	return b
}

// WrongIDResponse is a well-formed result carrying another request's id.
func (m Message) WrongIDResponse() []byte {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": m.wrongID(),
		"result": m.result(map[string]any{"content": []any{map[string]any{"type": "text", "text": WrongIDText}}}),
	})
	return b
}

// result completes a scripted result like a backend's normal answers: a
// 2026-07-28 request's result carries "resultType": "complete".
func (m Message) result(r map[string]any) map[string]any {
	if m.Modern {
		r["resultType"] = "complete"
	}
	return r
}

// InvalidJSON is a response cut off in the middle of its JSON.
func (m Message) InvalidJSON() []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + string(m.IDOr()) + `,"result":{"content":[{"type":"text","text":"cut`)
}
