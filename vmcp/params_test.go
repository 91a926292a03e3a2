package vmcp

import (
	"bytes"
	"encoding/json"
	"maps"
	"testing"
)

// TestBackendParamsAsMarshal: backendParams writes what json.Marshal of
// the params map (name replaced, _meta dropped or replaced) wrote before
// it: the same bytes for compact values without HTML characters, the
// same JSON (equal once compacted and decoded) for any other.
func TestBackendParamsAsMarshal(t *testing.T) {
	t.Parallel()
	seeds := append([]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a_echo","arguments":{"q":"a<b & c>d","n":[1,{"x":null}]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{ "spaced" : [ 1 , 2 ] },"name":"a_echo","zeta":true,"_meta":{"progressToken":"p"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a\"b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"é\u0001","ключ":"значение"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`,
	}, envelopeSeeds...)
	for _, s := range seeds {
		var req rpcRequest
		if decodeRequest([]byte(s), &req) != nil {
			continue
		}
		for _, key := range []string{"name", "uri"} {
			for _, name := range []string{"echo", `we"ird<name>\`, "ünï"} {
				for _, meta := range []json.RawMessage{nil, json.RawMessage(`{"progressToken":"p"}`)} {
					want := marshalParams(t, req.Params, key, name, meta)
					got := backendParams(req.Params, key, name, meta)
					if !json.Valid(got) {
						t.Fatalf("%s key %s name %q: %s is not JSON", s, key, name, got)
					}
					if !sameJSON(got, want) {
						t.Errorf("%s key %s name %q meta %s:\n got %s\nwant %s", s, key, name, meta, got, want)
					}
				}
			}
		}
	}
	req := rpcRequest{Params: map[string]json.RawMessage{"name": json.RawMessage(`"x_echo"`), "arguments": json.RawMessage(`{"msg":"hi"}`),
		"_meta": json.RawMessage(`{"progressToken":1,"other":2}`)}}
	if got, want := string(backendParams(req.Params, "name", "echo", nil)), `{"arguments":{"msg":"hi"},"name":"echo"}`; got != want {
		t.Errorf("compact params: got %s, want %s (json.Marshal's bytes)", got, want)
	}
}

// marshalParams is what the hop did before backendParams.
func marshalParams(t *testing.T, params map[string]json.RawMessage, key, name string, meta json.RawMessage) []byte {
	t.Helper()
	out := maps.Clone(params)
	if out == nil {
		out = map[string]json.RawMessage{}
	}
	delete(out, "_meta")
	if meta != nil {
		out["_meta"] = meta
	}
	out[key], _ = json.Marshal(name)
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	var va, vb any
	if json.Unmarshal(ca.Bytes(), &va) != nil || json.Unmarshal(cb.Bytes(), &vb) != nil {
		return false
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}

// TestStringParamAsUnmarshal: stringParam is json.Unmarshal into a
// string, error or not.
func TestStringParamAsUnmarshal(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{`"echo"`, `"a\"b"`, `"\u00e9"`, `"é"`, "\"\xff\"", `null`, `5`, `{"a":1}`, `""`, `"a b<c>"`, "\"\x01\""} {
		got, gotErr := stringParam(json.RawMessage(raw))
		var want string
		wantErr := json.Unmarshal([]byte(raw), &want)
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%s: got %q (%v), want %q (%v)", raw, got, gotErr, want, wantErr)
		}
	}
}
