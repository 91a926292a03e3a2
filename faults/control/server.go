// Package control holds what the control APIs of the chaos proxy and the
// fake backends share: the server side (bounded bodies, JSON answers, the
// bearer-token gate, the loopback rule, a status-recording writer, the
// lease that clears faults nobody renews) and the client both the harness
// and the experiment runner use.
package control

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
)

// MaxBody bounds a control API request body.
const MaxBody = 1 << 20

// IsLoopback reports whether host is localhost or a loopback IP: a control
// API on any other address needs a token.
func IsLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// ErrBodyTooLarge is ReadBody's error for a body over MaxBody (answered
// 413).
var ErrBodyTooLarge = fmt.Errorf("body larger than %d bytes (1 MiB)", MaxBody)

// ReadBody reads a request body of at most MaxBody bytes; a larger body is
// ErrBodyTooLarge, never truncated.
func ReadBody(r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err == nil && len(data) > MaxBody {
		err = ErrBodyTooLarge
	}
	return data, err
}

// WriteJSON writes v as indented JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// WriteError writes {"error": err} with status.
func WriteError(w http.ResponseWriter, status int, err error) {
	WriteJSON(w, status, map[string]string{"error": err.Error()})
}

// RequireToken serves next only for requests that carry "Authorization:
// Bearer token" (any request when token is empty); others get 401 naming
// realm.
func RequireToken(token, realm string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		if subtle.ConstantTimeCompare([]byte(got), []byte("Bearer "+token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+realm+`"`)
			WriteError(w, http.StatusUnauthorized, fmt.Errorf("missing or wrong bearer token"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// StatusWriter records the first status written; http.ResponseController
// reaches the writer underneath through Unwrap (flushes, hijacks).
type StatusWriter struct {
	http.ResponseWriter
	// Status is the status written, 0 before any.
	Status int
}

// WriteHeader implements http.ResponseWriter.
func (s *StatusWriter) WriteHeader(code int) {
	if s.Status == 0 {
		s.Status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (s *StatusWriter) Write(p []byte) (int, error) {
	if s.Status == 0 {
		s.Status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// Flush implements http.Flusher.
func (s *StatusWriter) Flush() { _ = http.NewResponseController(s.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *StatusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Faults is what the shared fault routes act on; each returns the JSON
// answer (an object with at least "faults").
type Faults struct {
	List   func() map[string]any
	Change func(r *http.Request, body []byte, add bool) (map[string]any, error) // PUT (add false) or POST
	Clear  func() map[string]any
	// Requests returns the request log for GET /requests.
	Requests func() any
}

// HandleFaults registers GET|PUT|POST|DELETE /faults and GET /requests on
// mux. A body over MaxBody answers 413, a rejected change 400, each with
// its error.
func HandleFaults(mux *http.ServeMux, f Faults) {
	mux.HandleFunc("GET /faults", func(w http.ResponseWriter, r *http.Request) { WriteJSON(w, http.StatusOK, f.List()) })
	change := func(add bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			body, err := ReadBody(r)
			if errors.Is(err, ErrBodyTooLarge) {
				WriteError(w, http.StatusRequestEntityTooLarge, err)
				return
			}
			var answer map[string]any
			if err == nil {
				answer, err = f.Change(r, body, add)
			}
			if err != nil {
				WriteError(w, http.StatusBadRequest, err)
				return
			}
			WriteJSON(w, http.StatusOK, answer)
		}
	}
	mux.HandleFunc("PUT /faults", change(false))
	mux.HandleFunc("POST /faults", change(true))
	mux.HandleFunc("DELETE /faults", func(w http.ResponseWriter, r *http.Request) { WriteJSON(w, http.StatusOK, f.Clear()) })
	mux.HandleFunc("GET /requests", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]any{"requests": f.Requests()})
	})
}
