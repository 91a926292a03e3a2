package proxy

import (
	"fmt"
	"net/http"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/strictyaml"
)

// Engine is the fault-application seam: what the proxy needs of a fault
// engine. Bodies are control API bodies (YAML or JSON, a list of faults or
// {faults: [...]}) as the fake backends take them; source names the body
// in errors (e.g. "PUT /faults").
type Engine interface {
	// Handler returns next with the active faults applied in front of it;
	// host offers what acts beyond one exchange.
	Handler(next http.Handler, host Host) http.Handler
	// Scheduled reports the time-driven faults: whether a `down` crash
	// is active now, and whether a one-shot session expiry is due (each
	// reported once).
	Scheduled() (down, expire bool)
	// Set replaces the faults (ending the stalls the old ones hold).
	Set(body []byte, source string) error
	// Add appends faults.
	Add(body []byte, source string) error
	// Clear removes every fault (ending their stalls).
	Clear()
	// List returns the faults in force as a JSON-encodable value that
	// Set reads back.
	List() any
	// Len is how many faults are in force.
	Len() int
}

// Host is what the proxy offers faults beyond one exchange.
type Host struct {
	// ExpireSessions makes the sessions seen so far answer 404.
	ExpireSessions func()
}

// NewEngine returns the shared fault engine (package faults: the fake
// backends' kinds, matching and schedules) behind the seam.
func NewEngine() Engine { return &sharedEngine{e: faults.NewEngine(1)} }

type sharedEngine struct{ e *faults.Engine }

// Set implements Engine.
func (s *sharedEngine) Set(body []byte, source string) error { return s.change(body, source, s.e.Set) }

// Add implements Engine.
func (s *sharedEngine) Add(body []byte, source string) error { return s.change(body, source, s.e.Add) }

// change decodes and checks a control API body (the fake backends' schema
// and rules for streamable HTTP, and what a proxy can do), then hands its
// faults to set (Set or Add). A proxy does not own the backend's process:
// crash exit is refused (crash down closes the proxy's own listener;
// session_expire makes the proxy answer 404 for the sessions it has seen).
func (s *sharedEngine) change(body []byte, source string, set func(...faults.Fault)) error {
	fs, err := fakebackends.ParseFaults(body, source)
	if err != nil {
		return err
	}
	v := faults.Validator{File: source}
	for i := range fs {
		field := fmt.Sprintf("faults[%d]", i)
		if err := v.Validate(&fs[i], field, faults.TransportStreamableHTTP); err != nil {
			return err
		}
		f, fld := &fs[i], field
		if eff := f.Effective(); eff != f {
			f, fld = eff, fld+".fault"
		}
		if c, ok := f.Params.(*faults.Crash); ok && c.Exit {
			return &strictyaml.Error{File: source, Field: fld + ".kind",
				Msg: "not supported by a proxy: crash exit: a proxy has no backend process to end (leave exit out: the connection dies)"}
		}
	}
	set(fs...)
	return nil
}

// Clear implements Engine.
func (s *sharedEngine) Clear() { s.e.Set() }

// List implements Engine.
func (s *sharedEngine) List() any { return s.e.List() }

// Len implements Engine.
func (s *sharedEngine) Len() int { return len(s.e.List()) }

// Scheduled implements Engine.
func (s *sharedEngine) Scheduled() (down, expire bool) { return s.e.Due(true) }

// Handler implements Engine: faults.Middleware's steps, plus the legacy SSE
// session stream (StreamFrom) for answers written by faults, and the
// request log (RecordFrom).
func (s *sharedEngine) Handler(next http.Handler, host Host) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msg, ok := faults.ReadMessage(r)
		if !ok {
			return // the client went away
		}
		if faults.ServeResumed(w, r) { // a GET resuming a wrong_id_resumed stream
			return
		}
		d := s.e.Decide(msg.Method, msg.Name)
		if rec := RecordFrom(r.Context()); rec != nil {
			rec.Method, rec.Tool, rec.Fault = msg.Method, msg.Name, d.Label
			if len(msg.ID) > 0 {
				rec.ID = string(msg.ID)
			}
		}
		x := &faults.Exchange{W: w, R: r, Msg: msg, Next: next, Stream: StreamFrom(r.Context()), ExpireSessions: host.ExpireSessions}
		faults.Serve(x, d)
	})
}
