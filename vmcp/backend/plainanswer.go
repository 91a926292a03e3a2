package backend

import (
	"encoding/json"

	"github.com/vmcp-chaos/vmcp-chaos/internal/jsonobj"
)

// plainResult returns the result of body when body is the plain answer to
// request id: one valid JSON object whose members are exactly "jsonrpc"
// ("2.0"), "id" (written as id is) and "result" (an object), each once,
// keys without escapes. Such a body passes every check the transport's
// validators make (checkMessage) and mcp-go decodes it into exactly this
// result, so the direct forward takes it without decoding it. Anything
// else (ok false) is left to those validators and mcp-go: an error
// answer, a wrong id, a message from the server, an odd spelling.
func plainResult(body []byte, id string) (result json.RawMessage, ok bool) {
	if !json.Valid(body) {
		return nil, false
	}
	var seenRPC, seenID bool
	whole := jsonobj.Members(body, func(key, val []byte) bool {
		switch string(key) {
		case "jsonrpc":
			ok := !seenRPC && string(val) == `"2.0"`
			seenRPC = true
			return ok
		case "id":
			ok := !seenID && string(val) == id
			seenID = true
			return ok
		case "result":
			ok := result == nil && len(val) > 0 && val[0] == '{'
			result = val
			return ok
		}
		return false
	})
	if !whole || !seenRPC || !seenID || result == nil {
		return nil, false
	}
	return result, true
}
