package faults

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// The malformed variants that forge an answer where a gateway may not
// look (issue 12 item 1): the answer carries id 424242, which no request
// has, and the text ForgedText, which must never reach a client.
const (
	// MalformedWrongIDEvent answers on streamable HTTP with an SSE event
	// named "foo" (not "message") carrying the forged answer, then ends the
	// stream. mcp-go's reader dispatches it whatever its name.
	MalformedWrongIDEvent = "wrong_id_event"
	// MalformedWrongIDResumed ends the POST's SSE stream after an event
	// that only carries an event id (the client resumes, SEP-1699), and
	// answers the resuming GET (Last-Event-ID, same session) with the
	// forged answer as a "message" event. Only legacy (2025-11-25)
	// sessions resume; a modern client sees a stream that ended before
	// its answer.
	MalformedWrongIDResumed = "wrong_id_resumed"

	// ForgedID is the id of a forged answer.
	ForgedID = 424242
	// ForgedText is the text of a forged answer.
	ForgedText = "forged"
	// WrongIDText is the text of the wrong_id variant's answer (a
	// well-formed result carrying another request's id); like
	// ForgedText, it must never reach a client as a call's answer.
	WrongIDText = "answer to another request"
)

// ForgedAnswer is a well-formed tools/call result with ForgedID.
func ForgedAnswer() []byte {
	return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":%q}]}}`, ForgedID, ForgedText))
}

// forgedHTTP carries out the two forging variants on streamable HTTP. On
// the legacy SSE transport (x.Stream set) they send the forged answer as
// a "message" event of the session stream, as wrong_id does.
func (p *Malformed) forgedHTTP(x *Exchange) {
	if x.Stream != nil {
		x.Respond(ForgedAnswer())
		return
	}
	x.W.Header().Set("Content-Type", "text/event-stream")
	switch p.Variant {
	case MalformedWrongIDEvent:
		x.W.WriteHeader(http.StatusOK)
		_, _ = x.W.Write([]byte("event: foo\ndata: " + string(ForgedAnswer()) + "\n\n"))
	case MalformedWrongIDResumed:
		ev := resumes.prime(x.R.Header.Get("Mcp-Session-Id"))
		x.W.WriteHeader(http.StatusOK)
		_, _ = fmt.Fprintf(x.W, "id: %s\nretry: 10\ndata: \n\n", ev)
	}
	x.Flush() // returning ends the stream
}

// ServeResumed answers a GET that resumes a stream primed by
// wrong_id_resumed (its Last-Event-ID, the same session) with the forged
// answer, and reports whether it did. Hosts call it before their faults
// (the GET carries no JSON-RPC message a fault could match); Middleware
// does.
func ServeResumed(w http.ResponseWriter, r *http.Request) bool {
	if !TakeResumed(r) {
		return false
	}
	WriteResumed(w)
	return true
}

// TakeResumed reports whether r is a GET resuming a stream that
// wrong_id_resumed primed (its Last-Event-ID, same session), and takes
// that resume: WriteResumed must answer it. ServeResumed is both.
func TakeResumed(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	ev := r.Header.Get("Last-Event-ID")
	return ev != "" && resumes.take(ev, r.Header.Get("Mcp-Session-Id"))
}

// WriteResumed answers a resuming GET that TakeResumed took: the forged
// answer, as a "message" event.
func WriteResumed(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(SSEEvent(ForgedAnswer()))
	_ = http.NewResponseController(w).Flush()
}

// primedStreams remembers the event ids wrong_id_resumed handed out, each
// for one resume within primedTTL; at most primedMax are kept.
type primedStreams struct {
	mu sync.Mutex
	m  map[string]primed
}

type primed struct {
	session string
	at      time.Time
}

const (
	primedTTL = time.Minute
	primedMax = 4096
)

var resumes = &primedStreams{m: map[string]primed{}}

func (p *primedStreams) prime(session string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	ev := "vmcp-chaos-forged-" + hex.EncodeToString(b[:])
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, v := range p.m {
		if now.Sub(v.at) > primedTTL || len(p.m) >= primedMax {
			delete(p.m, k)
		}
	}
	p.m[ev] = primed{session: session, at: now}
	return ev
}

func (p *primedStreams) take(ev, session string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.m[ev]
	if !ok || v.session != session || time.Since(v.at) > primedTTL {
		return false
	}
	delete(p.m, ev)
	return true
}
