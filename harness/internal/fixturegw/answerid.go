package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
)

// answerIDs is the http.RoundTripper of fixture i's backend clients: it
// keeps mcp-go's client, which takes any answer on a request's response
// (a JSON body, or an event of its stream or of the stream resuming it)
// as that request's, from taking another request's answer. An answer
// whose JSON-RPC id is not the request's is replaced by a JSON-RPC error
// carrying the request's id, so the call fails at once; on a stream that
// answers no request (a GET that resumes no stream of this session) an
// answer is dropped. One answerIDs serves one backend session.
type answerIDs struct {
	next http.RoundTripper
	mu   sync.Mutex
	// events maps the SSE event ids of a request's stream to its id (in
	// canonical form), for the GET that resumes the stream (Last-Event-ID).
	events map[string]string
}

func newAnswerIDs(next http.RoundTripper) *answerIDs {
	return &answerIDs{next: next, events: map[string]string{}}
}

// maxJSONAnswer bounds a JSON answer read whole to see its id.
const maxJSONAnswer = 16 << 20

func (a *answerIDs) RoundTrip(r *http.Request) (*http.Response, error) {
	want, ok := a.expected(r)
	if !ok {
		return a.next.RoundTrip(r)
	}
	resp, err := a.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case mt == "text/event-stream":
		resp.Body = &sseIDs{a: a, want: want, src: bufio.NewReader(resp.Body), closer: resp.Body}
	case mt == "application/json" && want != "":
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONAnswer+1))
		_ = resp.Body.Close()
		if err == nil && len(body) > maxJSONAnswer {
			err = fmt.Errorf("answer over %d bytes", maxJSONAnswer)
		}
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(checkAnswer(body, want)))
	default:
		return resp, nil
	}
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	return resp, nil
}

// expected is the canonical id of the request whose answer r's response
// carries ("" for a stream that answers none: any answer on it is
// dropped), and whether the response is checked at all (a POST of a
// request, or a GET).
func (a *answerIDs) expected(r *http.Request) (string, bool) {
	switch r.Method {
	case http.MethodGet:
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.events[r.Header.Get("Last-Event-ID")], true
	case http.MethodPost:
		if r.GetBody == nil {
			return "", false
		}
		body, err := r.GetBody()
		if err != nil {
			return "", false
		}
		defer body.Close()
		var msg struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
		}
		if json.NewDecoder(io.LimitReader(body, maxJSONAnswer)).Decode(&msg) != nil || msg.Method == "" {
			return "", false
		}
		id := canonicalID(msg.ID)
		return id, id != "" // a notification has no answer
	}
	return "", false
}

// canonicalID is a JSON-RPC id in one spelling ("" for none or null).
func canonicalID(raw json.RawMessage) string {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil || v == nil {
		return ""
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// checkAnswer is msg, a JSON-RPC message, unless it is an answer whose id
// is not want: then a JSON-RPC error with id want naming the id it
// carried (nil, for want "": the answer is dropped).
func checkAnswer(msg []byte, want string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || m["method"] != nil || (m["result"] == nil && m["error"] == nil) {
		return msg
	}
	got := canonicalID(m["id"])
	if got == "" || got == want {
		return msg
	}
	if want == "" {
		return nil
	}
	out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(want),
		"error": map[string]any{"code": -32603, "message": fmt.Sprintf("backend answered with id %s, not the request's id %s", got, want)}})
	return out
}

// sseIDs passes an event stream through an event at a time, each event's
// data checked by checkAnswer, and records the event ids it passes as
// belonging to want's stream.
type sseIDs struct {
	a      *answerIDs
	want   string
	src    *bufio.Reader
	closer io.Closer
	buf    []byte
	err    error
}

func (s *sseIDs) Read(p []byte) (int, error) {
	for len(s.buf) == 0 && s.err == nil {
		s.buf, s.err = s.event()
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	if len(s.buf) == 0 && s.err != nil {
		return n, s.err
	}
	return n, nil
}

func (s *sseIDs) Close() error { return s.closer.Close() }

// event reads the next event (its lines up to and with the blank line
// that ends it, or up to the stream's end) and returns it as passed on.
func (s *sseIDs) event() ([]byte, error) {
	var lines []string
	var data []string
	var err error
	for {
		var line string
		line, err = s.src.ReadString('\n')
		if line != "" {
			lines = append(lines, line)
			trimmed := strings.TrimRight(line, "\r\n")
			if d, ok := strings.CutPrefix(trimmed, "data:"); ok {
				data = append(data, strings.TrimPrefix(d, " "))
			} else if id, ok := strings.CutPrefix(trimmed, "id:"); ok && s.want != "" {
				s.a.mu.Lock()
				s.a.events[strings.TrimPrefix(id, " ")] = s.want
				s.a.mu.Unlock()
			}
			if trimmed == "" {
				break
			}
		}
		if err != nil {
			break
		}
	}
	if errors.Is(err, io.EOF) && len(lines) == 0 {
		return nil, err
	}
	msg := []byte(strings.Join(data, "\n"))
	checked := checkAnswer(msg, s.want)
	if len(data) == 0 || bytes.Equal(checked, msg) {
		return []byte(strings.Join(lines, "")), err
	}
	// The event's other lines (its name, id, retry) pass; its data is the
	// checked answer, or none.
	var out strings.Builder
	for _, line := range lines {
		t := strings.TrimRight(line, "\r\n")
		if !strings.HasPrefix(t, "data:") && t != "" {
			out.WriteString(line)
		}
	}
	if checked != nil {
		out.WriteString("data: " + string(checked) + "\n")
	}
	out.WriteString("\n")
	return []byte(out.String()), err
}
