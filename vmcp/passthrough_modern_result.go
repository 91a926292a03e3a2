package vmcp

import (
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/internal/jsonobj"
)

// What mcp-go's path makes of a backend's result for a stateless client,
// done on the raw result (the modern hop: passthrough_modern.go).
// mcp-go's client gives up on a result that asks for input
// (resultType "input_required": the gateway's client has no handler to
// fulfil it); its server then writes the handler's result with the
// metadata the 2026-07-28 revision requires (decorateResponse): a
// resultType ("complete" unless set), the server's identity in _meta
// (unless the result names one: a backend's own stays), and for
// resources/read, whose handler returns only the contents, a new result
// with the default caching hints.

// errInputRequired is a result that asks the client for input: the
// gateway's client cannot give any, so the request fails (a
// transport_error naming the backend, as mcp-go's client's does).
var errInputRequired = errors.New(`multi round-trip: the backend asked for input (resultType "input_required"), which the gateway's client cannot provide`)

// resultTypeInputRequired is the JSON of mcp.ResultTypeInputRequired.
const resultTypeInputRequired = `"` + string(mcp.ResultTypeInputRequired) + `"`

// modernResult returns result as mcp-go's server writes it for a
// stateless client's method; errInputRequired if it asks for input.
func (g *Gateway) modernResult(method string, result json.RawMessage) (json.RawMessage, error) {
	var rtype, meta, contents []byte
	var dup bool
	plain := jsonobj.Members(result, func(k, v []byte) bool {
		var slot *[]byte
		switch string(k) {
		case "resultType":
			slot = &rtype
		case "_meta":
			slot = &meta
		case "contents":
			slot = &contents
		default:
			return true
		}
		dup = dup || *slot != nil
		*slot = v
		return true
	})
	if !plain || dup {
		return g.modernResultDecoded(method, result)
	}
	if string(rtype) == resultTypeInputRequired {
		return nil, errInputRequired
	}
	if method == string(mcp.MethodResourcesRead) {
		return g.readResult(contents), nil
	}
	if rtype != nil && string(rtype) != `""` && string(rtype) != "null" && hasServerInfo(meta) {
		return result, nil // as mcp-go's backend wrote it: nothing to add
	}
	return g.modernResultDecoded(method, result)
}

// hasServerInfo reports whether a result's _meta names a server.
func hasServerInfo(meta []byte) bool {
	found := false
	ok := jsonobj.Members(meta, func(k, v []byte) bool {
		if string(k) == mcp.MetaKeyServerInfo && len(v) > 0 && v[0] == '{' {
			found = true
		}
		return true
	})
	return ok && found
}

// modernResultDecoded is modernResult for any result, decoded.
func (g *Gateway) modernResultDecoded(method string, result json.RawMessage) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(result, &fields); err != nil || fields == nil {
		return nil, &invalidResult{err: err}
	}
	var rtype mcp.ResultType
	if raw := fields["resultType"]; raw != nil {
		if err := json.Unmarshal(raw, &rtype); err != nil {
			return nil, &invalidResult{err: err}
		}
	}
	if rtype == mcp.ResultTypeInputRequired {
		return nil, errInputRequired
	}
	if method == string(mcp.MethodResourcesRead) {
		return g.readResult(fields["contents"]), nil
	}
	if rtype == "" {
		fields["resultType"], _ = json.Marshal(mcp.ResultTypeComplete)
	}
	meta := map[string]json.RawMessage{}
	if raw := fields["_meta"]; raw != nil && string(raw) != "null" {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, &invalidResult{err: err}
		}
	}
	if !hasServerInfo(fields["_meta"]) {
		meta[mcp.MetaKeyServerInfo] = g.serverInfoJSON()
		fields["_meta"], _ = json.Marshal(meta)
	}
	return json.Marshal(fields)
}

// readResult is the result mcp-go's server writes for a resources/read
// whose handler returned contents.
func (g *Gateway) readResult(contents json.RawMessage) json.RawMessage {
	if len(contents) == 0 {
		contents = json.RawMessage("null")
	}
	info := g.serverInfoJSON()
	out := make([]byte, 0, len(contents)+len(info)+128)
	out = append(out, `{"_meta":{"`+mcp.MetaKeyServerInfo+`":`...)
	out = append(out, info...)
	out = append(out, `},"resultType":"complete","ttlMs":0,"cacheScope":"`+string(mcp.CacheScopePrivate)+`","contents":`...)
	out = append(out, contents...)
	return append(out, '}')
}

// serverInfoJSON is the gateway's identity as its MCP server states it.
func (g *Gateway) serverInfoJSON() json.RawMessage {
	b, _ := json.Marshal(mcp.Implementation{Name: g.cfg.Name, Version: Version})
	return b
}

// invalidResult is a result mcp-go's client could not decode.
type invalidResult struct{ err error }

func (e *invalidResult) Error() string {
	if e.err == nil {
		return "failed to unmarshal result: not a JSON object"
	}
	return "failed to unmarshal result: " + e.err.Error()
}
