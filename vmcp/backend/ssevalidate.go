package backend

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
)

// sseValidator sits between a backend's SSE body and mcp-go. It parses the
// stream event by event and passes on only events it has validated, so a
// bad event (malformed JSON, wrong id, oversized) is never dispatched: the
// reader fails instead, and the reason is recorded in the call trace (or,
// for the legacy SSE transport's GET stream, fails the connection).
type sseValidator struct {
	src      io.ReadCloser
	cancel   context.CancelFunc
	reqID    string
	trace    *callTrace
	maxBytes int64
	hooks    streamHooks
	isStream bool // the legacy SSE transport's long-lived GET stream
	resumed  bool // a resumed response stream (GET with Last-Event-ID)

	validated
	br           *bufio.Reader
	raw          bytes.Buffer // the current event's raw lines
	event        string
	data         strings.Builder
	responseSeen bool
	drop         bool // the current event is a late response: not passed on
	sawEventID   bool
	closeOnce    sync.Once
}

func (v *sseValidator) Read(p []byte) (int, error) {
	if v.br == nil {
		v.br = bufio.NewReaderSize(v.src, 32<<10)
	}
	return v.read(p, v.step)
}

func (v *sseValidator) Close() error {
	var err error
	v.closeOnce.Do(func() {
		err = v.src.Close()
		v.cancel()
	})
	return err
}

// validated is the Read side of the validators: Read returns what step
// has validated (out), calling step until there is some or it fails.
type validated struct {
	out bytes.Buffer
	err error
}

func (v *validated) read(p []byte, step func() error) (int, error) {
	for v.out.Len() == 0 {
		if v.err != nil {
			return 0, v.err
		}
		v.err = step()
	}
	return v.out.Read(p)
}

// readLine reads one line (with its newline) from br; when it makes the
// message (had bytes already read, then the line) larger than maxBytes it
// is an *invalidResponseError.
func readLine(br *bufio.Reader, had int, maxBytes int64) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if int64(had+len(line)) > maxBytes {
			return nil, &invalidResponseError{Reason: fmt.Sprintf("message larger than %d bytes", maxBytes)}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// step consumes one line; a completed, valid event is appended to out.
func (v *sseValidator) step() error {
	line, err := readLine(v.br, v.raw.Len(), v.maxBytes)
	if errors.As(err, new(*invalidResponseError)) {
		return v.reject(err)
	}
	v.raw.Write(line)
	if err == nil && len(bytes.TrimRight(line, "\r\n")) == 0 {
		if err := v.dispatch(); err != nil {
			return v.reject(err)
		}
		return nil
	}
	v.field(line) // a field, or what the stream ended with
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, io.EOF):
		v.trace.setBodyErr(err)
		return err
	}
	// A pending event is dispatched at EOF by mcp-go: validate it too.
	if v.data.Len() > 0 {
		if verr := v.dispatch(); verr != nil {
			return v.reject(&invalidResponseError{Reason: "truncated stream: " + strings.TrimPrefix(verr.Error(), "invalid response: ")})
		}
	}
	if !v.isStream && !v.resumed && v.reqID != "" && !v.responseSeen && !v.sawEventID {
		// Whatever was validated is delivered first (Read returns out
		// before the error).
		return v.reject(&invalidResponseError{Reason: "truncated stream: it ended before the response"})
	}
	return io.EOF
}

func (v *sseValidator) field(line []byte) {
	s := strings.TrimRight(string(line), "\r\n")
	switch {
	case strings.HasPrefix(s, "data:"):
		if v.data.Len() > 0 {
			v.data.WriteByte('\n')
		}
		v.data.WriteString(strings.TrimPrefix(strings.TrimPrefix(s, "data:"), " "))
	case strings.HasPrefix(s, "event:"):
		v.event = strings.TrimSpace(strings.TrimPrefix(s, "event:"))
	case strings.HasPrefix(s, "id:"):
		v.sawEventID = true
	}
}

// dispatch ends the current event: validated (when it carries data), it
// is passed on unless it is a late response.
func (v *sseValidator) dispatch() error {
	if v.data.Len() > 0 {
		if err := v.validate(); err != nil {
			return err
		}
	}
	if !v.drop {
		v.out.Write(v.raw.Bytes())
	}
	v.raw.Reset()
	v.data.Reset()
	v.event = ""
	v.drop = false
	return nil
}

func (v *sseValidator) reject(err error) error {
	if v.isStream {
		v.hooks.fail(err)
	} else {
		v.trace.setInvalid(err)
	}
	return err
}

// validate checks the current event's data.
//
// On the legacy SSE transport's GET stream only "message" events are
// dispatched by mcp-go (the "endpoint" event is its own; other names are
// ignored). Streamable HTTP's reader dispatches every event's data
// whatever the event name, so there every event that carries a JSON-RPC
// message is checked: unnamed and "message" events always, events of
// other names when their data is a JSON object (other data mcp-go skips).
func (v *sseValidator) validate() error {
	named := v.event != "" && v.event != "message"
	if named && (v.isStream || !jsonObject(v.data.String())) {
		return nil
	}
	data := []byte(v.data.String())
	if v.isStream {
		// The answer to a request the gateway gave up on (timeout,
		// cancel): nobody waits for it; drop it.
		var err error
		v.drop, err = arrivedOn(v.hooks, data)
		return err
	}
	if v.reqID == "" {
		if v.resumed {
			// A resumed stream belongs to a request; with none pending,
			// no response is expected on it.
			return checkUnexpected(data)
		}
		return nil
	}
	response, err := checkAnswer(data, v.reqID, v.trace, false)
	v.responseSeen = v.responseSeen || response
	return err
}

// jsonObject reports whether s is a JSON object (what mcp-go can decode as
// a JSON-RPC message).
func jsonObject(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, "{") && json.Valid([]byte(s))
}

// checkUnexpected fails a response (a message without a method) on a
// stream where no request is pending.
func checkUnexpected(data []byte) error {
	env, err := parseMessage(data)
	if err != nil {
		return err
	}
	if !env.fromServer() {
		return &invalidResponseError{Reason: fmt.Sprintf("response id %s does not match any request", orNone(idKey(env.ID)))}
	}
	return nil
}
