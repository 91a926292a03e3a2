package backend

import (
	"bytes"
	"encoding/json"
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
	b := bytes.TrimSpace(body)
	if len(b) < 2 || b[0] != '{' {
		return nil, false
	}
	var seenRPC, seenID bool
	i := skipSpace(b, 1)
	for i < len(b) && b[i] == '"' {
		end := bytes.IndexByte(b[i+1:], '"')
		if end < 0 {
			return nil, false
		}
		key := b[i+1 : i+1+end]
		if bytes.IndexByte(key, '\\') >= 0 {
			return nil, false
		}
		i = skipSpace(b, i+end+2)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		start := skipSpace(b, i+1)
		stop := skipValue(b, start)
		val := b[start:stop]
		switch string(key) {
		case "jsonrpc":
			if seenRPC || string(val) != `"2.0"` {
				return nil, false
			}
			seenRPC = true
		case "id":
			if seenID || string(val) != id {
				return nil, false
			}
			seenID = true
		case "result":
			if result != nil || len(val) == 0 || val[0] != '{' {
				return nil, false
			}
			result = val
		default:
			return nil, false
		}
		i = skipSpace(b, stop)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		break
	}
	if i != len(b)-1 || b[i] != '}' || !seenRPC || !seenID || result == nil {
		return nil, false
	}
	return result, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value starting at b[i], b being
// valid JSON (json.Valid): it only has to find where the value ends.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default: // number, true, false, null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return i
			}
			i++
		}
		return i
	}
}

// skipString returns the index just past the string starting at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}
