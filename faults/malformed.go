package faults

import (
	"bytes"
	"net/http"
	"slices"
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

// Malformed are the parameters of malformed.
type Malformed struct {
	Variant string `yaml:"variant,omitempty" json:"variant,omitempty"`
	Size    Size   `yaml:"size,omitempty" json:"size,omitempty"` // oversized only
}

func init() {
	Register(Spec{Kind: KindMalformed, Order: 70, New: func() Params { return &Malformed{} }})
}

// Validate implements Params.
func (p *Malformed) Validate(c *Check) error {
	if p.Variant == "" {
		return c.Errf("variant", "required (want %s)", join(malformedVariants))
	}
	if !slices.Contains(malformedVariants, p.Variant) {
		return c.Errf("variant", "unknown malformed variant %q (want %s)", p.Variant, join(malformedVariants))
	}
	if p.Variant == MalformedOversized && (p.Size <= 0 || p.Size > 1<<30) {
		return c.Errf("size", "required for variant oversized: a size in 1B..1GiB such as \"2MiB\"")
	}
	if p.Variant != MalformedOversized && p.Size != 0 {
		return c.Errf("size", "size applies only to variant oversized")
	}
	return p.checkEmptyVariant(c)
}

// HTTP implements Params.
func (p *Malformed) HTTP(x *Exchange) bool {
	switch p.Variant {
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
		p.forgedHTTP(x)
	case MalformedAccepted, MalformedEmptyBody, MalformedUnansweredSSE, MalformedNoResult:
		p.emptyHTTP(x)
	default:
		x.Respond(p.answer(x.Msg))
	}
	return false
}

// Stdio implements Params.
func (p *Malformed) Stdio(x *StdioExchange) { x.Write(p.answer(x.Msg)) }

func (p *Malformed) answer(m Message) []byte {
	switch p.Variant {
	case MalformedWrongID:
		return m.WrongIDResponse()
	case MalformedWrongIDEvent, MalformedWrongIDResumed:
		return ForgedAnswer() // stdio has neither event names nor resumption
	case MalformedOversized:
		return Oversized(m, int64(p.Size))
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
