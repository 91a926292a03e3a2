package vmcp

import (
	"encoding/json"
	"mime"
	"slices"

	"github.com/vmcp-chaos/vmcp-chaos/internal/jsonobj"
)

// backendParams encodes the params a forwarded request sends its
// backend: the client's params, keys sorted as json.Marshal of the map
// would write them, key's value replaced by name (the backend's own), and
// _meta left out, or replaced by meta when meta is not nil. Values are
// written as they came (the client's body is valid JSON: decodeRequest);
// only keys and name are encoded, which is what json.Marshal of the map
// did at several times the cost (reflection, sorting, re-compacting every
// value).
func backendParams(params map[string]json.RawMessage, key, name string, meta json.RawMessage) json.RawMessage {
	keys := make([]string, 0, len(params)+2)
	size := len(name) + len(meta) + 16
	for k, v := range params {
		if k != key && k != "_meta" {
			keys = append(keys, k)
			size += len(k) + len(v) + 4
		}
	}
	keys = append(keys, key)
	if meta != nil {
		keys = append(keys, "_meta")
	}
	slices.Sort(keys)
	out := make([]byte, 0, size)
	out = append(out, '{')
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendJSONString(out, k)
		out = append(out, ':')
		switch k {
		case key:
			out = appendJSONString(out, name)
		case "_meta":
			out = append(out, meta...)
		default:
			out = append(out, params[k]...)
		}
	}
	return append(out, '}')
}

// appendJSONString appends s as a JSON string, as json.Marshal writes
// it: plain printable ASCII as it is, anything else through json.Marshal.
func appendJSONString(b []byte, s string) []byte {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// stringParam decodes a params value as json.Unmarshal into a string
// does (null leaves ""), reading a plain ASCII string without escapes in
// place.
func stringParam(raw json.RawMessage) (string, error) {
	if s, ok := jsonobj.String(raw); ok && plainASCII(s) {
		return string(s), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// mediaType is mime.ParseMediaType's media type, read without parsing
// (nor allocating) for the usual "application/json".
func mediaType(ct string) (string, error) {
	if ct == "application/json" {
		return ct, nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	return mt, err
}
