package proxy

import "net/http"

// Engine is the fault-application seam: what the proxy needs of a fault
// engine. Bodies are control API bodies (YAML or JSON, a list of faults or
// {faults: [...]}) as the fake backends take them; source names the body
// in errors (e.g. "PUT /faults").
type Engine interface {
	// Handler returns next with the active faults applied in front of it.
	Handler(next http.Handler) http.Handler
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
