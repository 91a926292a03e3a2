package vmcp

import (
	"bytes"
	"encoding/json"

	"github.com/vmcp-chaos/vmcp-chaos/internal/jsonobj"
)

// decodeRequest decodes a client's request body into req as
// json.Unmarshal does, error included. The usual envelope (the four keys
// spelled as they are, each once, strings without escapes, params an
// object or null whose keys are plain and distinct) is read without
// reflection, its raw values sharing body; anything else is left to
// json.Unmarshal.
func decodeRequest(body []byte, req *rpcRequest) error {
	if json.Valid(body) && plainEnvelope(body, req) {
		return nil
	}
	*req = rpcRequest{}
	return json.Unmarshal(body, req)
}

// envelopeKeys are rpcRequest's keys; json.Unmarshal matches them
// without case.
var envelopeKeys = []string{"jsonrpc", "id", "method", "params"}

// plainEnvelope decodes valid JSON body into req if it is the usual
// envelope (see decodeRequest).
func plainEnvelope(body []byte, req *rpcRequest) bool {
	*req = rpcRequest{}
	var seen [4]bool // envelopeKeys
	return jsonobj.Members(body, func(key, val []byte) bool {
		if !plainASCII(key) {
			return false
		}
		k := string(key)
		for i, e := range envelopeKeys {
			if k == e {
				if seen[i] {
					return false // json.Unmarshal keeps the last
				}
				seen[i] = true
			}
		}
		switch k {
		case "jsonrpc", "method":
			s, ok := jsonobj.String(val)
			if !ok || !plainASCII(s) {
				return false
			}
			if k == "jsonrpc" {
				req.JSONRPC = string(s)
			} else {
				req.Method = string(s)
			}
			return true
		case "id":
			req.ID = val
			return true
		case "params":
			if string(val) == "null" {
				req.Params = nil
				return true
			}
			req.Params = map[string]json.RawMessage{}
			return jsonobj.Members(val, func(pk, pv []byte) bool {
				if _, dup := req.Params[string(pk)]; dup || !plainASCII(pk) {
					return false
				}
				req.Params[string(pk)] = pv
				return true
			})
		}
		for _, e := range envelopeKeys {
			if bytes.EqualFold(key, []byte(e)) {
				return false // json.Unmarshal takes it for e
			}
		}
		return true // ignored, as json.Unmarshal does
	})
}

// plainASCII reports whether b is printable ASCII: what json.Unmarshal
// neither folds (Unicode case folding) nor repairs (invalid UTF-8).
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}
