package faults

import (
	"bytes"
	"net/http"
	"strings"
)

// KindMalformed sends a broken answer of its variant.
const KindMalformed Kind = "malformed"

// Malformed variants.
const (
	MalformedInvalidJSON  = "invalid_json"
	MalformedWrongID      = "wrong_id"
	MalformedTruncatedSSE = "truncated_sse"
	MalformedOversized    = "oversized"
)

var malformedVariants = []string{MalformedInvalidJSON, MalformedWrongID, MalformedTruncatedSSE, MalformedOversized,
	MalformedWrongIDEvent, MalformedWrongIDResumed, MalformedAccepted, MalformedEmptyBody, MalformedUnansweredSSE, MalformedNoResult}

func init() {
	Register(Spec{
		Kind:   KindMalformed,
		Order:  70,
		Params: []string{"variant", "size"},
		Validate: func(f *Fault, c *Check) error {
			if f.Variant == "" {
				return c.Errf("variant", "required (want %s)", join(malformedVariants))
			}
			if !oneOf(f.Variant, malformedVariants) {
				return c.Errf("variant", "unknown malformed variant %q (want %s)", f.Variant, join(malformedVariants))
			}
			if f.Variant == MalformedOversized && (f.Size <= 0 || f.Size > 1<<30) {
				return c.Errf("size", "required for variant oversized: a size in 1B..1GiB such as \"2MiB\"")
			}
			if f.Variant != MalformedOversized && f.Size != 0 {
				return c.Errf("size", "size applies only to variant oversized")
			}
			return checkEmptyVariant(f, c)
		},
		HTTP: func(x *Exchange, f *Fault) bool {
			switch f.Variant {
			case MalformedTruncatedSSE:
				part := []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + string(x.Msg.IDOr()) + ",\"result\":{\"con")
				if x.Stream != nil {
					x.W.WriteHeader(http.StatusAccepted)
					x.Stream.Inject(part)
					x.Stream.Cancel() // the stream ends in the middle of an event
					return false
				}
				x.W.Header().Set("Content-Type", "text/event-stream")
				x.W.WriteHeader(http.StatusOK)
				_, _ = x.W.Write(part)
				x.Flush() // returning ends the body cleanly mid-event
			case MalformedWrongIDEvent, MalformedWrongIDResumed:
				forgedHTTP(x, f)
			case MalformedAccepted, MalformedEmptyBody, MalformedUnansweredSSE, MalformedNoResult:
				emptyHTTP(x, f)
			default:
				x.Respond(malformedAnswer(x.Msg, f))
			}
			return false
		},
		Stdio: func(x *StdioExchange, f *Fault) { x.Write(malformedAnswer(x.Msg, f)) },
	})
}

func malformedAnswer(m Message, f *Fault) []byte {
	switch f.Variant {
	case MalformedWrongID:
		return m.WrongIDResponse()
	case MalformedWrongIDEvent, MalformedWrongIDResumed:
		return ForgedAnswer() // stdio has neither event names nor resumption
	case MalformedOversized:
		return Oversized(m, int64(f.Size))
	case MalformedNoResult:
		return m.NoResultResponse()
	}
	return m.InvalidJSON()
}

// Oversized builds a valid result whose text makes the body about size bytes.
func Oversized(msg Message, size int64) []byte {
	var buf bytes.Buffer
	buf.Grow(int(size) + 128)
	buf.WriteString(`{"jsonrpc":"2.0","id":` + string(msg.IDOr()) + `,"result":{"content":[{"type":"text","text":"`)
	buf.WriteString(strings.Repeat("x", int(max(size-int64(buf.Len())-8, 1))))
	buf.WriteString(`"}]}}`)
	return buf.Bytes()
}
