package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// rewriter is a ResponseWriter that passes every JSON-RPC message of an MCP
// response through fn: a JSON body whole (once the handler returns), an
// event stream line by line as it is written (flushes pass through, so
// streaming and progress stay live).
type rewriter struct {
	w       http.ResponseWriter
	fn      func([]byte) []byte
	mode    int // 0 undecided, 1 pass, 2 buffer JSON, 3 event stream
	status  int
	buf     bytes.Buffer
	pending []byte
}

func newRewriter(w http.ResponseWriter, fn func([]byte) []byte) *rewriter {
	return &rewriter{w: w, fn: fn}
}

func (rw *rewriter) Header() http.Header { return rw.w.Header() }

func (rw *rewriter) WriteHeader(code int) {
	if rw.mode != 0 {
		return
	}
	rw.status = code
	ct := rw.w.Header().Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		rw.mode = 2
		rw.w.Header().Del("Content-Length")
	case strings.HasPrefix(ct, "text/event-stream"):
		rw.mode = 3
		rw.w.WriteHeader(code)
	default:
		rw.mode = 1
		rw.w.WriteHeader(code)
	}
}

func (rw *rewriter) Write(p []byte) (int, error) {
	if rw.mode == 0 {
		rw.WriteHeader(http.StatusOK)
	}
	switch rw.mode {
	case 2:
		return rw.buf.Write(p)
	case 3:
		rw.pending = append(rw.pending, p...)
		for i := bytes.IndexByte(rw.pending, '\n'); i >= 0; i = bytes.IndexByte(rw.pending, '\n') {
			if _, err := rw.w.Write(rw.rewriteLine(rw.pending[:i+1])); err != nil {
				return 0, err
			}
			rw.pending = rw.pending[i+1:]
		}
		return len(p), nil
	}
	return rw.w.Write(p)
}

func (rw *rewriter) rewriteLine(line []byte) []byte {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return line
	}
	body := bytes.TrimSpace(data)
	if len(body) == 0 || body[0] != '{' && body[0] != '[' {
		return line
	}
	return append(append([]byte("data: "), rw.fn(body)...), '\n')
}

// Flush passes flushes of an event stream through.
func (rw *rewriter) Flush() {
	if rw.mode == 3 || rw.mode == 1 {
		if f, ok := rw.w.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (rw *rewriter) Unwrap() http.ResponseWriter { return rw.w }

// finish writes a buffered JSON body (rewritten) and any partial line.
func (rw *rewriter) finish() {
	switch rw.mode {
	case 2:
		out := rw.fn(rw.buf.Bytes())
		rw.w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		rw.w.WriteHeader(rw.status)
		_, _ = rw.w.Write(out)
	case 3:
		if len(rw.pending) > 0 {
			_, _ = rw.w.Write(rw.pending)
		}
	}
}

// The reference's error wording: `backend "beta" unavailable: ...`,
// `backend "beta" error: ...`, `backend "beta" call canceled: ...`.
var referenceErrRE = regexp.MustCompile(`backend "([^"]+)" (unavailable|error|call canceled): `)

// reword says an error the look's way.
func (f *front) reword(text string) string {
	return referenceErrRE.ReplaceAllStringFunc(text, func(m string) string {
		sub := referenceErrRE.FindStringSubmatch(m)
		backend, what := sub[1], sub[2]
		switch {
		case f.anonymous && what == "error":
			return "the server returned an error: "
		case f.anonymous:
			return "tool call failed: "
		case f.look == "a" && what == "error":
			return "backend " + backend + " returned an error: "
		case f.look == "a":
			return "tool call failed on backend " + backend + ": "
		case what == "error":
			return "server '" + backend + "' answered with an error: "
		default:
			return "server '" + backend + "' failed: "
		}
	})
}

// rewriteMessage rewrites one JSON-RPC message (or batch): error texts
// reworded; look a also drops _meta from tools and results and data from
// errors. Anything it cannot parse passes unchanged.
func (f *front) rewriteMessage(body []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var msg any
	if err := dec.Decode(&msg); err != nil {
		return body
	}
	switch m := msg.(type) {
	case map[string]any:
		f.rewriteOne(m)
	case []any:
		for _, e := range m {
			if em, ok := e.(map[string]any); ok {
				f.rewriteOne(em)
			}
		}
	default:
		return body
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return body
	}
	return out
}

func (f *front) rewriteOne(m map[string]any) {
	if e, ok := m["error"].(map[string]any); ok {
		if s, ok := e["message"].(string); ok {
			e["message"] = f.reword(s)
		}
		if f.look == "a" || f.anonymous {
			delete(e, "data")
		}
	}
	res, ok := m["result"].(map[string]any)
	if !ok {
		return
	}
	f.q.rewriteResult(res)
	if tools, ok := res["tools"].([]any); ok && f.look == "a" {
		for _, t := range tools {
			if tm, ok := t.(map[string]any); ok {
				delete(tm, "_meta")
			}
		}
	}
	if isErr, _ := res["isError"].(bool); isErr {
		if content, ok := res["content"].([]any); ok {
			for _, c := range content {
				if cm, ok := c.(map[string]any); ok {
					if s, ok := cm["text"].(string); ok {
						cm["text"] = f.reword(s)
					}
				}
			}
		}
		if f.look == "a" || f.anonymous {
			delete(res, "_meta")
		}
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
