package backend

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
)

// TestPlainResult: only a body that checkMessage accepts and mcp-go reads
// into exactly that result is taken without them; each refused body is
// one the validators or mcp-go must see.
func TestPlainResult(t *testing.T) {
	t.Parallel()
	const id = "100000000000001"
	take := map[string]string{
		`{"jsonrpc":"2.0","id":100000000000001,"result":{}}`:                                `{}`,
		` { "result" : {"a":[1,{"}":"]"}]} , "id":100000000000001,"jsonrpc":"2.0" }` + "\n": `{"a":[1,{"}":"]"}]}`,
		`{"jsonrpc":"2.0","id":100000000000001,"result":{"s":"\"}\\"}}`:                     `{"s":"\"}\\"}`,
	}
	for body, want := range take {
		got, ok := plainResult([]byte(body), id)
		if !ok || string(got) != want {
			t.Errorf("%s: got %s, %v; want %s", body, got, ok, want)
		}
	}
	refuse := []string{
		``,
		`null`,
		`[]`,
		`{"jsonrpc":"2.0","id":100000000000002,"result":{}}`,   // another id
		`{"jsonrpc":"2.0","id":"100000000000001","result":{}}`, // a string id
		`{"jsonrpc":"2.0","id":100000000000001.0,"result":{}}`, // the same id, spelled otherwise: idKey's call
		`{"jsonrpc":"2.0","id":100000000000001,"result":[]}`,   // not an object
		`{"jsonrpc":"2.0","id":100000000000001,"result":null}`, // not an object
		`{"jsonrpc":"2.0","id":100000000000001}`,               // no result
		`{"jsonrpc":"2.0","result":{}}`,                        // no id
		`{"id":100000000000001,"result":{}}`,                   // no jsonrpc
		`{"jsonrpc":"1.0","id":100000000000001,"result":{}}`,   // another version
		`{"jsonrpc":"2.0","id":100000000000001,"result":{},"error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":100000000000001,"result":{},"method":"x"}`,
		`{"jsonrpc":"2.0","id":100000000000001,"Result":{}}`, // read case-insensitively
		`{"jsonrpc":"2.0","id":100000000000001,"result":{},"result":{}}`,
		`{"jsonrpc":"2.0","id":100000000000001,"id":100000000000001,"result":{}}`,
		`{"jsonrpc":"2.0","\u0069d":100000000000001,"result":{}}`,  // an escaped key
		`{"jsonrpc":"2.0","id":100000000000001,"result":{}`,        // malformed
		`{"jsonrpc":"2.0","id":100000000000001,"result":{}} {}`,    // two values
		`{"jsonrpc":"2.0","id":100000000000001,"result":{"a":1,}}`, // malformed inside
	}
	for _, body := range refuse {
		if got, ok := plainResult([]byte(body), id); ok {
			t.Errorf("%s: took %s", body, got)
		}
	}
}

// FuzzPlainResult: whatever plainResult takes, the validators accept as
// the response to the request and mcp-go decodes into the same result.
func FuzzPlainResult(f *testing.F) {
	const id = "100000000000001"
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":100000000000001,"result":{}}`,
		`{"result":{"a":"\"}"},"jsonrpc":"2.0","id":100000000000001}`,
		`{"jsonrpc":"2.0","id":100000000000001,"result":{"x":[1,2,{"y":null}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		result, ok := plainResult(body, id)
		if !ok {
			return
		}
		if err := checkMessage(body, id, nil); err != nil {
			t.Fatalf("%s: taken as %s, the validators say %v", body, result, err)
		}
		var resp transport.JSONRPCResponse
		if err := json.Unmarshal(body, &resp); err != nil || resp.Error != nil || string(resp.Result) != string(result) {
			t.Fatalf("%s: taken as %s, mcp-go reads %s (error %v, %v)", body, result, resp.Result, resp.Error, err)
		}
	})
}
