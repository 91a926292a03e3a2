package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
)

// rpcCodeFlag is --rpc-error-code: a JSON-RPC error code (any integer, 0
// too) and whether it was given.
type rpcCodeFlag struct {
	code int
	set  bool
}

var _ flag.Value = (*rpcCodeFlag)(nil)

func (c *rpcCodeFlag) String() string {
	if c == nil || !c.set {
		return ""
	}
	return strconv.Itoa(c.code)
}

func (c *rpcCodeFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want an integer JSON-RPC error code (e.g. 0 or -32005), got %q", s)
	}
	c.code, c.set = n, true
	return nil
}

// resetKinds are the reference's error kinds that a gateway built on
// net/http words with the socket's error: the backend reset or closed
// the connection.
var resetKinds = map[string]bool{"connection_reset": true, "connection_closed": true}

// toRPCError rewrites one JSON-RPC answer to a tools/call (or a batch of
// them) the way a gateway that reports backend failures as JSON-RPC
// errors does (--rpc-error-code): the reference's report of a backend's
// failure (an isError result whose _meta names the backend, or a JSON-RPC
// error whose data does) becomes an error answer to the same id with code
// q.rpcErrorCode and the message "backend NAME: tool call failed: CAUSE".
// A backend's own isError result (no backend in _meta), a success and
// what does not parse pass unchanged.
func (q *quirks) toRPCError(body []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || m["id"] == nil || m["method"] != nil {
		return body
	}
	var res struct {
		IsError bool `json:"isError"`
		Meta    struct {
			Backend string `json:"vmcp/backend"`
			Kind    string `json:"vmcp/errorKind"`
		} `json:"_meta"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	var rpcErr struct {
		Message string `json:"message"`
		Data    struct {
			Backend string `json:"backend"`
			Kind    string `json:"kind"`
		} `json:"data"`
	}
	var backend, kind, text string
	switch {
	case m["result"] != nil && json.Unmarshal(m["result"], &res) == nil && res.IsError && res.Meta.Backend != "":
		backend, kind = res.Meta.Backend, res.Meta.Kind
		for _, c := range res.Content {
			text += c.Text
		}
	case m["error"] != nil && json.Unmarshal(m["error"], &rpcErr) == nil && rpcErr.Data.Backend != "":
		backend, kind, text = rpcErr.Data.Backend, rpcErr.Data.Kind, rpcErr.Message
	default:
		return body
	}
	cause := text
	if loc := referenceErrRE.FindStringIndex(text); loc != nil {
		cause = text[loc[1]:]
	}
	if resetKinds[kind] {
		cause = fmt.Sprintf("read tcp 127.0.0.1:0->%s: connection reset by peer", q.backendHosts[backend])
	}
	out, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m["id"], "error": map[string]any{
		"code": q.rpcErrorCode, "message": fmt.Sprintf("backend %s: tool call failed: %s", backend, cause)}})
	if err != nil {
		return body
	}
	return out
}
