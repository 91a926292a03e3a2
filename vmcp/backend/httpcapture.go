package backend

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"
)

// httpStatusError is a non-2xx answer from a backend, kept with its status
// even when its body is JSON (mcp-go would lose it).
type httpStatusError struct {
	Status  int
	Snippet string
}

func (e *httpStatusError) Error() string {
	s := fmt.Sprintf("HTTP %d %s", e.Status, http.StatusText(e.Status))
	if e.Snippet != "" {
		s += ": " + e.Snippet
	}
	return s
}

// invalidResponseError is a response the gateway refuses to use.
type invalidResponseError struct {
	Reason string
}

func (e *invalidResponseError) Error() string { return "invalid response: " + e.Reason }

// callTrace collects what the HTTP layer saw during one backend call. It
// travels in the call's context to the RoundTripper. A nil *callTrace (a
// request outside a backend call) records nothing.
type callTrace struct {
	mu sync.Mutex
	traceSnapshot
}

// traceSnapshot is what a call's trace holds.
type traceSnapshot struct {
	requestID string // JSON-RPC id of the last request sent with an id
	status    int
	invalid   error // the first invalid response
	rpcCode   int
	rpcMsg    string
	rpcSeen   bool
	bodyErr   error // the first error reading a response body
}

type traceKey struct{}

func withTrace(ctx context.Context, t *callTrace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

func traceFrom(ctx context.Context) *callTrace {
	t, _ := ctx.Value(traceKey{}).(*callTrace)
	return t
}

// update runs fn on the trace under its lock.
func (t *callTrace) update(fn func(s *traceSnapshot)) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	fn(&t.traceSnapshot)
}

func (t *callTrace) setRequest(id string) { t.update(func(s *traceSnapshot) { s.requestID = id }) }

func (t *callTrace) setStatus(status int) { t.update(func(s *traceSnapshot) { s.status = status }) }

func (t *callTrace) setRPCError(code int, msg string) {
	t.update(func(s *traceSnapshot) { s.rpcCode, s.rpcMsg, s.rpcSeen = code, msg, true })
}

// setInvalid records err unless an invalid response was recorded before.
func (t *callTrace) setInvalid(err error) {
	t.update(func(s *traceSnapshot) { s.invalid = cmp.Or(s.invalid, err) })
}

// setBodyErr records err unless a body error was recorded before.
func (t *callTrace) setBodyErr(err error) {
	t.update(func(s *traceSnapshot) { s.bodyErr = cmp.Or(s.bodyErr, err) })
}

// snapshot returns a copy of what the trace holds (zero for a nil trace);
// its requestID is the id of the request the call is waiting for ("" if
// it sent none).
func (t *callTrace) snapshot() (snap traceSnapshot) {
	t.update(func(s *traceSnapshot) { snap = *s })
	return snap
}

// streamHooks lets a legacy HTTP+SSE connection check responses arriving on
// its long-lived GET stream against the requests it sent.
type streamHooks interface {
	expect(id string)
	arrived(id string) (known, late bool) // see conn.arrived
	fail(err error)
}

// captureTransport wraps the backend HTTP transport. It
//   - bounds every request with a backstop timeout (DELETE with the close
//     timeout), except the long-lived SSE GET stream, which lives as long as
//     its connection;
//   - turns every non-2xx status except 404 into an *httpStatusError, so the
//     status survives whatever mcp-go does with the body;
//   - validates JSON responses and SSE streams: malformed JSON, a wrong id,
//     an oversized message or a stream that ends before the response become
//     *invalidResponseError (recorded in the call's trace as well).
type captureTransport struct {
	base         http.RoundTripper
	maxBytes     int64
	backstop     time.Duration
	closeTimeout time.Duration
	hooks        streamHooks // nil except for the sse transport
}

type rpcEnvelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result present         `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	// methodKey: the object has a key spelled exactly "method" (the
	// struct above also matches "Method", "METHOD"…, mcp-go's streamable
	// client does not).
	methodKey bool
}

// present records that a key is there (null included) without copying
// its value.
type present bool

// UnmarshalJSON implements json.Unmarshaler.
func (p *present) UnmarshalJSON([]byte) error { *p = true; return nil }

// checkAnswered fails a response with neither a result nor an error
// (JSON-RPC requires one): mcp-go would hand its client an empty result.
func checkAnswered(env rpcEnvelope, id string) error {
	if !env.Result && env.Error == nil {
		return &invalidResponseError{Reason: fmt.Sprintf("response to request %s has neither result nor error", orNone(id))}
	}
	return nil
}

// fromServer reports whether the message is a request or notification of
// the server rather than a response. Only a message every reader takes
// for one counts: a notification (no id) with a method, or a request with
// an id and a key spelled exactly "method" (mcp-go's streamable HTTP
// client takes {"id":…,"Method":"x"} as the response to its request,
// whatever the id). Everything else is a response and is checked.
func (e rpcEnvelope) fromServer() bool {
	return e.Method != "" && (idKey(e.ID) == "" || e.methodKey)
}

// idKey normalises a raw JSON-RPC id for comparison ("" for none/null):
// the JSON of the value decoded and encoded again, so 7, 7.0 and 7e0 are
// one id. Ids that are already in that form (small integers, plain ASCII
// strings: what every client sends) are returned as they are, without
// decoding.
func idKey(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return ""
	}
	if canonicalID(s) {
		return s
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// canonicalID reports whether s is a JSON id that json.Marshal would
// write back unchanged: an integer of at most 15 digits without a leading
// zero, or a string of printable ASCII without escapes or the characters
// json.Marshal escapes (<, >, &).
func canonicalID(s string) bool {
	if q, ok := strings.CutPrefix(s, `"`); ok {
		body, closed := strings.CutSuffix(q, `"`)
		return closed && !strings.ContainsFunc(body, func(c rune) bool {
			return c < 0x20 || c > 0x7e || strings.ContainsRune(`"\<>&`, c)
		})
	}
	d := strings.TrimPrefix(s, "-")
	return len(d) > 0 && len(d) <= 15 && (d[0] != '0' || s == "0") &&
		!strings.ContainsFunc(d, func(c rune) bool { return c < '0' || c > '9' })
}

// requestPrefix is how mcp-go's client starts every request body it
// writes (json.Marshal of its JSONRPCRequest: jsonrpc, id, method,
// params, in that order).
const requestPrefix = `{"jsonrpc":"2.0","id":`

// peekRequest returns the id (as idKey would) and method of a request
// body the gateway's own client wrote. The usual layout is read without
// decoding; anything else is decoded.
func peekRequest(body []byte) (id, method string) {
	if rest, ok := bytes.CutPrefix(body, []byte(requestPrefix)); ok {
		if i := bytes.IndexByte(rest, ','); i > 0 {
			rawID, after := string(rest[:i]), rest[i+1:]
			if m, ok := bytes.CutPrefix(after, []byte(`"method":"`)); ok && canonicalID(rawID) {
				if j := bytes.IndexByte(m, '"'); j > 0 && bytes.IndexByte(m[:j], '\\') < 0 {
					return rawID, string(m[:j])
				}
			}
		}
	}
	var env rpcEnvelope
	if json.Unmarshal(body, &env) == nil && env.Method != "" {
		return idKey(env.ID), env.Method
	}
	return "", ""
}

func (t *captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tr := traceFrom(req.Context())
	var reqID string
	if req.Body != nil && req.Method == http.MethodPost {
		body, err := readBody(req.Body, req.ContentLength, -1)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		// A shallow copy is enough: only Body and GetBody change (and
		// the context below).
		r2 := *req
		req = &r2
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		var method string
		reqID, method = peekRequest(body)
		if method == "initialize" {
			// Replayable: net/http sends it again on a new connection
			// when a kept-alive one turns out dead after the write (the
			// backend restarted at the same address). Nothing exists on
			// the backend yet that a second initialize could harm. A nil
			// value marks it without sending the header.
			req.Header = req.Header.Clone()
			req.Header["Idempotency-Key"] = nil
		}
	}
	if reqID != "" {
		tr.setRequest(reqID)
		if t.hooks != nil {
			t.hooks.expect(reqID)
		}
	}

	stream := req.Method == http.MethodGet && req.Header.Get("Last-Event-ID") == ""
	// A streamable-HTTP response stream the backend ended after an event
	// id, reopened by mcp-go with a GET carrying Last-Event-ID (SEP-1699):
	// it carries the answer to the call's request, still pending.
	resumed := req.Method == http.MethodGet && !stream
	if resumed {
		reqID = tr.snapshot().requestID
	}
	ctx, cancel := req.Context(), context.CancelFunc(func() {})
	switch {
	case req.Method == http.MethodDelete && t.closeTimeout > 0:
		ctx, cancel = context.WithTimeout(ctx, t.closeTimeout)
	case !stream && t.backstop > 0:
		ctx, cancel = context.WithTimeout(ctx, t.backstop)
	}
	if ctx != req.Context() {
		req = req.WithContext(ctx)
	}

	var resp *http.Response
	var err error
	if h := takeHandover(req); h != nil {
		resp, err = h.resp, h.err // the direct forward's answer (inject.go)
	} else {
		resp, err = t.base.RoundTrip(req)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	tr.setStatus(resp.StatusCode)
	if (resp.StatusCode >= 400 && resp.StatusCode != http.StatusNotFound) ||
		(resp.StatusCode >= 300 && resp.StatusCode < 400 && !followed(resp)) {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		cancel()
		return nil, &httpStatusError{Status: resp.StatusCode, Snippet: oneLine(string(snippet), 200)}
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	invalid := func(e error) (*http.Response, error) {
		tr.setInvalid(e)
		return nil, e
	}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300 && mediaType == "application/json" && reqID != "":
		body, err := readBody(resp.Body, resp.ContentLength, t.maxBytes+1)
		resp.Body.Close()
		cancel()
		if err != nil {
			return nil, err
		}
		if int64(len(body)) > t.maxBytes {
			return invalid(&invalidResponseError{Reason: fmt.Sprintf("response larger than %d bytes", t.maxBytes)})
		}
		if len(bytes.TrimSpace(body)) == 0 {
			return invalid(&invalidResponseError{Reason: fmt.Sprintf("HTTP %d %s with an empty body, no response to request %s",
				resp.StatusCode, http.StatusText(resp.StatusCode), reqID)})
		}
		if e := checkMessage(body, reqID, tr); e != nil {
			return invalid(e)
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		return resp, nil
	case t.hooks == nil && reqID != "" && req.Method == http.MethodPost && resp.StatusCode >= 200 && resp.StatusCode < 300 &&
		mediaType != "text/event-stream":
		// Streamable HTTP answers a request with JSON or an SSE stream;
		// anything else (202 Accepted, the answer to a notification, 204,
		// an empty body) carries no response.
		resp.Body.Close()
		cancel()
		return invalid(&invalidResponseError{Reason: fmt.Sprintf("HTTP %d %s with no response to request %s (Content-Type %q)",
			resp.StatusCode, http.StatusText(resp.StatusCode), reqID, resp.Header.Get("Content-Type"))})
	case mediaType == "text/event-stream":
		resp.Body = &sseValidator{
			src:      resp.Body,
			cancel:   cancel,
			reqID:    reqID,
			trace:    tr,
			maxBytes: t.maxBytes,
			hooks:    t.hooks,
			isStream: stream && t.hooks != nil,
			resumed:  resumed,
		}
		return resp, nil
	default:
		resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
		return resp, nil
	}
}

// followed reports whether the http.Client follows redirect resp (a 301,
// 302, 303, 307 or 308 with a Location). Any other 3xx would reach mcp-go,
// which takes a JSON body of a status other than 200 and 202 as the answer
// to its request, unchecked and whatever its id: it is an HTTP status error.
func followed(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return resp.Header.Get("Location") != ""
	}
	return false
}

// parseMessage decodes one JSON-RPC message from a backend.
func parseMessage(data []byte) (rpcEnvelope, error) {
	// One Unmarshal: it checks the whole input is valid JSON before it
	// decodes (a *json.SyntaxError), then decodes only the envelope.
	var env rpcEnvelope
	if err := json.Unmarshal(data, &env); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return env, &invalidResponseError{Reason: "malformed JSON: " + oneLine(string(data), 60)}
		}
		return env, &invalidResponseError{Reason: "not a JSON-RPC message: " + oneLine(string(data), 60)}
	}
	if env.Method != "" {
		var keys map[string]json.RawMessage
		if json.Unmarshal(data, &keys) == nil {
			_, env.methodKey = keys["method"]
		}
	}
	return env, nil
}

// readBody reads r whole, at most limit bytes (limit < 0: no limit), in
// one allocation when the length is known.
func readBody(r io.Reader, length, limit int64) ([]byte, error) {
	if limit >= 0 {
		r = io.LimitReader(r, limit)
	}
	if length <= 0 || (limit >= 0 && length > limit) {
		return io.ReadAll(r)
	}
	buf := make([]byte, length, length+1)
	n, err := io.ReadFull(r, buf)
	if err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			err = io.ErrUnexpectedEOF // shorter than its Content-Length
		}
		return buf[:n], err
	}
	// A body longer than its Content-Length: read the rest too, so the
	// limit check sees it.
	rest, err := io.ReadAll(r)
	return append(buf, rest...), err
}

// arrivedOn checks a message read from a stream shared by every request
// of a connection (legacy SSE's GET stream, stdio's stdout): a response
// must answer a request the connection is waiting for (or gave up on: late
// is then true, and the message is dropped).
func arrivedOn(hooks streamHooks, data []byte) (late bool, err error) {
	env, err := parseMessage(data)
	if err != nil || env.fromServer() {
		return false, err // malformed, or a request or notification from the server
	}
	id := idKey(env.ID)
	known, late := hooks.arrived(id)
	if !known {
		return false, &invalidResponseError{Reason: fmt.Sprintf("response id %s does not match any request", orNone(id))}
	}
	if !late {
		if err := checkAnswered(env, id); err != nil {
			return false, err
		}
	}
	return late, nil
}

// checkMessage validates an application/json body answering reqID.
// mcp-go takes such a body as the answer whenever it has an id, even with
// a method: then the id must be reqID too.
func checkMessage(data []byte, reqID string, tr *callTrace) error {
	_, err := checkAnswer(data, reqID, tr, true)
	return err
}

// checkAnswer validates a message answering reqID (jsonBody: an
// application/json body, see checkMessage) and reports whether it is the
// response (rather than a request or notification from the server).
func checkAnswer(data []byte, reqID string, tr *callTrace, jsonBody bool) (response bool, err error) {
	env, err := parseMessage(data)
	if err != nil {
		return false, err
	}
	got := idKey(env.ID)
	if jsonBody && got != "" && env.Method != "" {
		env.methodKey = false // a response, whatever else it says
	}
	if env.fromServer() {
		return false, nil // a request or notification from the server
	}
	if got != reqID {
		return false, &invalidResponseError{Reason: fmt.Sprintf("response id %s does not match request id %s", orNone(got), reqID)}
	}
	if err := checkAnswered(env, got); err != nil {
		return false, err
	}
	if env.Error != nil {
		tr.setRPCError(env.Error.Code, env.Error.Message)
	}
	return true, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// oneLine shortens s to at most n bytes on one line.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
