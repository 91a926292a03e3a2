package vmcp

import (
	"encoding/json"
	"reflect"
	"testing"
)

var envelopeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":[1,"}"]},"_meta":{"progressToken":7}}}`,
	`{"jsonrpc":"2.0","id":"x","method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
	`{"jsonrpc":"2.0","id":1,"Method":"tools/call"}`,
	`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`,
	`{"jsonrpc":"2.0","id":1,"method":5}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}`,
	`{"jsonrpc":"2.0","id":1,"paramſ":{"a":1}}`,
	`{"jsonrpc":"2.0","id":1,"other":{"a":1},"method":"m"}`,
	`[{"jsonrpc":"2.0","id":1,"method":"m"}]`,
	`{"jsonrpc":"2.0","id":1,"method":"m"`,
	` {"jsonrpc" : "2.0" , "id" : 1 , "method" : "m" , "params" : { "k" : [ 1 , 2 ] } } `,
}

// TestDecodeRequestAsUnmarshal: decodeRequest decodes what json.Unmarshal
// decodes, error or not, for the usual envelope and for each odd one it
// leaves to json.Unmarshal.
func TestDecodeRequestAsUnmarshal(t *testing.T) {
	t.Parallel()
	for _, s := range envelopeSeeds {
		checkDecodeRequest(t, []byte(s))
	}
	var req rpcRequest
	if !plainEnvelope([]byte(envelopeSeeds[0]), &req) || req.Method != "tools/call" || string(req.Params["name"]) != `"echo"` {
		t.Errorf("the usual envelope was not read without reflection: %+v", req)
	}
}

// FuzzDecodeRequest: decodeRequest is json.Unmarshal.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkDecodeRequest(t, body) })
}

func checkDecodeRequest(t *testing.T, body []byte) {
	t.Helper()
	var got, want rpcRequest
	gotErr := decodeRequest(body, &got)
	wantErr := json.Unmarshal(body, &want)
	if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v (%v)\nwant %+v (%v)", body, got, gotErr, want, wantErr)
	}
}
