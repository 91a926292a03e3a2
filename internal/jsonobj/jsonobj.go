// Package jsonobj walks the members of a JSON object without decoding it:
// the keys and the raw values, as slices of the input. The gateway's
// pass-through hop reads envelopes with it (the client's request, the
// backend's answer) where encoding/json's reflection and copies cost more
// than the rest of the hop.
package jsonobj

import "bytes"

// Members calls fn with each member of the object b, in order: its key
// (without quotes) and its value (trimmed). b must be valid JSON
// (json.Valid): Members only finds where things end. It stops and
// returns false when b is not an object, a key holds an escape (its text
// is not its bytes), or fn returns false.
func Members(b []byte, fn func(key, value []byte) bool) bool {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '{' {
		return false
	}
	i := skipSpace(b, 1)
	for i < len(b) && b[i] == '"' {
		end := bytes.IndexByte(b[i+1:], '"')
		if end < 0 {
			return false
		}
		key := b[i+1 : i+1+end]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		i = skipSpace(b, i+end+2)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		start := skipSpace(b, i+1)
		stop := skipValue(b, start)
		if !fn(key, b[start:stop]) {
			return false
		}
		i = skipSpace(b, stop)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		break
	}
	return i == len(b)-1 && b[i] == '}'
}

// String returns the text of a JSON string value v that holds no escape
// (ok false otherwise, or when v is not a string).
func String(v []byte) (s []byte, ok bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' || bytes.IndexByte(v, '\\') >= 0 {
		return nil, false
	}
	return v[1 : len(v)-1], true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the value starting at b[i] in valid JSON.
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
