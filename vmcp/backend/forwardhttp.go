package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
)

// The direct forward: the pass-through hop's request on a sessionful
// streamable-HTTP connection goes out on the gateway's pooled HTTP
// transport as mcp-go's transport would send it (same body, headers,
// session and protocol headers), without mcp-go's client, its goroutine
// per request, its encoding and decoding, and without copying the body
// through the captureTransport. The plain answer (an application/json
// body that is exactly the response to the request: plainResult) is
// taken after one validating scan; every other answer, and a failed send,
// is handed to mcp-go's transport (inject.go), which validates and reads
// it as before.

// directHTTP reports whether Forward sends directly (forwardHTTP).
func (c *Conn) directHTTP() bool {
	return c.streamable != nil && c.Forwardable()
}

// forwardHTTP sends request id directly and returns its result. hdr
// holds the request's own headers (the stateless revision's Mcp-Method
// and Mcp-Name: forwardstateless.go), nil on a sessionful connection.
func (c *Conn) forwardHTTP(ctx context.Context, id int64, method string, params json.RawMessage, hdr http.Header) (json.RawMessage, error) {
	if c.streamable.GetSessionId() != c.sessionID {
		// The backend ended the session (a 404): mcp-go refuses to send.
		c.handedOver.Add(1)
		return c.forwardClient(ctx, id, method, params, hdr)
	}
	idStr := strconv.FormatInt(id, 10)
	rctx := ctx
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > c.d.backstop() {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, c.d.backstop())
		defer cancel()
	}
	body := requestBody(idStr, method, params)
	tr := traceFrom(ctx)
	tr.setRequest(idStr)
	var resp *http.Response
	var err error
	if target, ok := c.rawTargetWith(hdr); ok {
		var ans rawAnswer
		ans, err = c.d.raw.rawRoundTrip(rctx, target, &http.Request{Method: http.MethodPost}, body, idStr, c.d.cfg.Limits.MaxResponseBytes)
		if ans.result != nil {
			tr.setStatus(ans.status)
			return ans.result, nil
		}
		resp = ans.resp
	} else {
		var req *http.Request
		if req, err = http.NewRequestWithContext(rctx, http.MethodPost, c.backend.URL, bytes.NewReader(body)); err != nil {
			c.handedOver.Add(1)
			return c.forwardClient(ctx, id, method, params, hdr) // mcp-go says what is wrong
		}
		for k, v := range hdr {
			req.Header[k] = v
		}
		c.setHeaders(req.Header)
		resp, err = c.d.httpBase.RoundTrip(req)
	}
	if err == nil {
		if result, ok := c.plainAnswer(resp, idStr); ok {
			tr.setStatus(resp.StatusCode)
			return result, nil
		}
	}
	c.handedOver.Add(1)
	h := &handover{resp: resp, err: err}
	defer h.release()
	return c.forwardClient(withHandover(ctx, h), id, method, params, hdr)
}

// plainAnswer returns the result of resp if it is the plain answer to
// request id. If it is not, what was read of resp's body is put back in
// front of the rest (or of the read's error) for mcp-go to read.
func (c *Conn) plainAnswer(resp *http.Response, id string) (json.RawMessage, bool) {
	orig := resp.Body
	var body []byte
	var rerr error
	if resp.StatusCode/100 == 2 && jsonBody(resp.Header.Get("Content-Type")) {
		max := c.d.cfg.Limits.MaxResponseBytes
		body, rerr = readBody(orig, resp.ContentLength, max+1)
		if rerr == nil && int64(len(body)) <= max {
			if result, ok := plainResult(body, id); ok {
				orig.Close()
				return result, true
			}
		}
	}
	// What was read, then the rest (or the read's error), as it came.
	rest := io.Reader(orig)
	if rerr != nil {
		rest = errReader{rerr}
	}
	resp.Body = replayBody{Reader: io.MultiReader(bytes.NewReader(body), rest), Closer: orig}
	return nil, false
}

// requestBody is the request as mcp-go's transport encodes it
// (requestPrefix, then method and params; params already compact JSON).
func requestBody(id, method string, params json.RawMessage) []byte {
	if len(params) == 0 {
		params = json.RawMessage("null")
	}
	b := make([]byte, 0, len(requestPrefix)+len(id)+len(method)+len(params)+24)
	b = append(b, requestPrefix...)
	b = append(b, id...)
	b = append(b, `,"method":`...)
	b = strconv.AppendQuote(b, method)
	b = append(b, `,"params":`...)
	b = append(b, params...)
	return append(b, '}')
}

// setHeaders sets what mcp-go's streamable HTTP transport sets on a
// request of a sessionful connection (sendHTTP), the configured headers
// last.
func (c *Conn) setHeaders(h http.Header) {
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	if c.sessionID != "" {
		h.Set(transport.HeaderKeySessionID, c.sessionID)
	}
	if c.protocol != "" {
		h.Set(transport.HeaderKeyProtocolVersion, c.protocol)
	}
	for k, v := range c.backend.Headers {
		h.Set(k, v)
	}
}

// jsonBody reports whether a Content-Type is application/json, as
// mime.ParseMediaType would say, without parsing the usual spellings.
func jsonBody(ct string) bool {
	switch ct {
	case "application/json", "application/json; charset=utf-8":
		return true
	}
	return false
}

type replayBody struct {
	io.Reader
	io.Closer
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// newRawTarget returns where the direct client sends this connection's
// forwards, sessionful or stateless (nil: on the gateway's Transport).
func (c *Conn) newRawTarget() *rawTarget {
	t, ok := c.d.httpBase.(*http.Transport)
	if c.d.raw == nil || !ok || c.streamable == nil {
		return nil
	}
	h := http.Header{}
	c.setHeaders(h)
	target, ok := newRawTarget(t, c.backend.URL, h)
	if !ok {
		return nil
	}
	return &target
}
