package fakebackends

import (
	"net"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/faults/control"
)

// ServeHTTP serves MCP through the fault engine.
func (b *Backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.inflight.Add(1)
	defer b.inflight.Done()
	if r.Method == http.MethodPost {
		b.posts.Add(1)
		defer b.posts.Add(-1)
	}
	g := b.current()
	conn, _ := r.Context().Value(connKey{}).(net.Conn)
	defer g.enter(conn)()
	sw := &control.StatusWriter{ResponseWriter: w}
	rec := NewRequestRecord(r)
	var pending int64
	defer func() {
		rec.Status = sw.Status
		rec.DurationMS = float64(time.Since(rec.Time).Microseconds()) / 1000
		b.log.End(pending, rec)
	}()

	msg, ok := faults.ReadMessage(r)
	if !ok {
		return // the client went away
	}
	msg.Modern = mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
	rec.Method, rec.Tool, rec.ID, rec.Marker, rec.Cancels = msg.Method, msg.Name, string(msg.ID), msg.Marker, string(msg.Cancels)
	switch {
	case msg.Modern:
		rec.Protocol = "modern"
	case b.script.Transport == TransportSSE || msg.Method != "" || r.Method != http.MethodPost:
		rec.Protocol = "legacy"
	}

	if faults.TakeResumed(r) {
		// In the log, with its fault, before it answers: a client that
		// reads the forged answer it carries finds the GET in the log.
		rec.Fault = string(faults.KindMalformed) + ":" + faults.MalformedWrongIDResumed
		pending = b.log.Begin(rec)
		faults.WriteResumed(sw)
		return
	}
	if b.refuseProtocol(sw, r, msg) {
		rec.Fault = "protocol"
		return
	}

	d := b.engine.Decide(msg.Method, msg.Name)
	rec.Fault = d.Label
	pending = b.log.Begin(rec) // a stalled request is in the log while it stalls
	faults.Serve(b.exchange(sw, r, g, msg, d.Label), d)
}

// serveMCP hands the request to the MCP transport. For SSE streams the
// writer is wrapped so that faults can write into the stream.
func (b *Backend) serveMCP(w http.ResponseWriter, r *http.Request, g *generation) {
	if b.script.Transport == TransportSSE && r.Method == http.MethodGet {
		st, ctx := g.streams.Open(r.Context(), w)
		defer st.Close()
		g.handler.ServeHTTP(st, r.WithContext(ctx))
		return
	}
	g.handler.ServeHTTP(w, r)
}

// refuseProtocol answers requests of a revision the script does not serve.
func (b *Backend) refuseProtocol(w http.ResponseWriter, r *http.Request, msg faults.Message) bool {
	if b.script.Protocol != ProtocolModern || b.script.Transport == TransportSSE || msg.Modern {
		return false
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "this backend serves protocol "+mcp.ProtocolVersion20260728+" only", http.StatusMethodNotAllowed)
		return true
	}
	if msg.Method == "server/discover" {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(msg.ErrorResponse(mcp.UNSUPPORTED_PROTOCOL_VERSION,
		"this backend serves protocol "+mcp.ProtocolVersion20260728+" only"))
	return true
}

// exchange is the request as faults see it, served normally by serveMCP.
func (b *Backend) exchange(w http.ResponseWriter, r *http.Request, g *generation, msg faults.Message, label string) *faults.Exchange {
	x := &faults.Exchange{W: w, R: r, Msg: msg, Done: g.done,
		Next:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { b.serveMCP(w, r, g) }),
		ExpireSessions: func() { b.ExpireSessions() },
		Exit: func(code int) {
			b.log.Add(RequestRecord{Time: time.Now(), Method: msg.Method, Tool: msg.Name, Fault: label + ":exit"})
			b.exit(code)
		},
		Hold: func() func() { b.stalls.Add(1); return func() { b.stalls.Add(-1) } },
	}
	if b.script.Transport == TransportSSE && r.Method == http.MethodPost { // the stream the answer goes to
		if st := g.streams.Get(r.URL.Query().Get("sessionId")); st != nil {
			x.Stream = st
		}
	}
	return x
}
