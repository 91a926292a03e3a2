package history

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
)

// What the wire showed of one call: whether a JSON-RPC answer to the
// call's own request id came back (and its error code), the HTTP status
// of the POST that carried the request, and, when no answer came, how the
// exchange ended. A call's outcome is decided from these facts, never
// from the words of an error: a gateway's JSON-RPC error that quotes its
// backend's "connection reset by peer" is an answer.

// maxWatchedMessage bounds the bytes of one JSON message (a JSON body, or
// an event's data) the watcher holds to find its id; a longer message is
// not examined (its facts stay unknown).
const maxWatchedMessage = 8 << 20

// wireFacts is what a call's exchanges showed (guarded by the idSlot's
// mutex).
type wireFacts struct {
	// status is the HTTP status of the POST that carried the request (0
	// when no response came).
	status int
	// answered is set once a JSON-RPC response with the request's id
	// (result or error) passed by.
	answered bool
	// code is the answer's JSON-RPC error code, when it was an error.
	code *int
	// ended says how an exchange of the call ended before any answer:
	// "the response ended without an answer", a read error, or a round
	// trip that failed ("" when none did).
	ended string
	// refused is set when a connection to the gateway was refused.
	refused bool
	// foreign is set when an answer carrying another request's id came on
	// an exchange of the call (a forged answer the client may take).
	foreign bool
}

// unanswered says, from the wire facts, why a call that returned err got
// no answer at all: "dropped" when a connection or stream carrying the
// request ended (or failed) before an answer to its id came, "refused"
// when no connection could be made, "" for an answer (a JSON-RPC answer
// to its id, any HTTP status other than 2xx) and for calls the wire says
// nothing about. Without wire facts (a call that never sent its
// request), typed transport errors decide (Unanswered).
func (f wireFacts) unanswered(err error) string {
	switch {
	case err == nil, f.answered, errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return ""
	case f.status != 0 && (f.status < 200 || f.status > 299):
		return ""
	case f.refused:
		return "refused"
	case f.ended != "":
		return "dropped"
	}
	return Unanswered(err)
}

// watch notes, in the call's slot, the status of resp and every JSON-RPC
// answer to the slot's id that its body carries, as the client reads it.
func (s *idSlot) watch(resp *http.Response, post bool) {
	if post {
		s.mu.Lock()
		s.facts.status = resp.StatusCode
		s.mu.Unlock()
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	sse := strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream")
	resp.Body = &answerWatch{ReadCloser: resp.Body, slot: s, sse: sse}
}

// roundTripFailed notes a round trip of the call that got no response.
func (s *idSlot) roundTripFailed(err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return // the client gave up: its own deadline, not the gateway's drop
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if errors.Is(err, syscall.ECONNREFUSED) {
		s.facts.refused = true
		return
	}
	if s.facts.ended == "" {
		s.facts.ended = "no response: " + err.Error()
	}
}

// message examines one JSON message of a response: an answer to the
// slot's id is noted.
func (s *idSlot) message(b []byte) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &msg) != nil || len(msg.ID) == 0 || (msg.Result == nil && msg.Error == nil) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.set {
		return
	}
	if !sameID(s.id, msg.ID) {
		s.facts.foreign = true
		return
	}
	s.facts.answered = true
	if msg.Error != nil {
		code := msg.Error.Code
		s.facts.code = &code
	}
}

// endedWithout notes an exchange whose body ended (or failed) before any
// answer to the slot's id.
func (s *idSlot) endedWithout(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.facts.answered && s.facts.ended == "" {
		s.facts.ended = why
	}
}

// snapshot returns the facts so far.
func (s *idSlot) snapshot() wireFacts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.facts
}

// sameID reports whether two JSON ids are the same value (1 and 1.0 are
// not: a gateway must return the id as sent).
func sameID(a, b json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
}

// answerWatch passes a response body through to the client, parsing it
// on the way: a JSON body whole at its end, an event stream event by
// event.
type answerWatch struct {
	io.ReadCloser
	slot *idSlot
	sse  bool
	buf  []byte // the JSON body so far, or the event stream's unfinished line
	data []byte // the data lines of the event being read
	over bool   // the message being read is longer than maxWatchedMessage
	done bool   // the body ended (EOF or error)
}

// Read implements io.Reader.
func (w *answerWatch) Read(p []byte) (int, error) {
	n, err := w.ReadCloser.Read(p)
	if n > 0 && !w.done {
		w.feed(p[:n])
	}
	if err != nil && !w.done {
		w.done = true
		if !w.sse && !w.over {
			w.slot.message(w.buf)
		} else if w.sse {
			w.line(w.buf) // a last line without its newline
			w.dispatch()
		}
		w.buf, w.data = nil, nil
		switch {
		case err == io.EOF:
			w.slot.endedWithout("the response ended without an answer")
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			// the client gave up: its own deadline, not the gateway's drop
		default:
			w.slot.endedWithout(fmt.Sprintf("the response broke off: %v", err))
		}
	}
	return n, err
}

// feed takes the next bytes of the body.
func (w *answerWatch) feed(b []byte) {
	if !w.sse {
		if len(w.buf)+len(b) > maxWatchedMessage {
			w.over, w.buf = true, nil
		}
		if !w.over {
			w.buf = append(w.buf, b...)
		}
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(w.buf)+len(b) <= maxWatchedMessage {
				w.buf = append(w.buf, b...)
			} else {
				w.over = true
			}
			return
		}
		w.line(append(w.buf, b[:i]...))
		w.buf, b = w.buf[:0], b[i+1:]
	}
}

// line takes one line of an event stream: data lines gather, an empty
// line ends the event.
func (w *answerWatch) line(l []byte) {
	l = bytes.TrimSuffix(l, []byte("\r"))
	switch {
	case len(l) == 0:
		w.dispatch()
	case bytes.HasPrefix(l, []byte("data:")):
		d := bytes.TrimPrefix(bytes.TrimPrefix(l, []byte("data:")), []byte(" "))
		if len(w.data)+len(d) > maxWatchedMessage {
			w.over = true
			return
		}
		if len(w.data) > 0 {
			w.data = append(w.data, '\n')
		}
		w.data = append(w.data, d...)
	}
}

// dispatch examines the event read so far.
func (w *answerWatch) dispatch() {
	if len(w.data) > 0 && !w.over {
		w.slot.message(w.data)
	}
	w.data, w.over = w.data[:0], false
}
