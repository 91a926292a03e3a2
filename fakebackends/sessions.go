package fakebackends

import (
	"fmt"
	"strings"
	"sync"

	"github.com/google/uuid"
)

// sessionStore is a session id manager that really remembers sessions, so
// that after ExpireSessions or a restart an old id answers 404. (mcp-go's
// default manager only checks an id's format.)
type sessionStore struct {
	mu       sync.Mutex
	sessions map[string]struct{}
}

const sessionPrefix = "mcp-session-"

func newSessionStore() *sessionStore {
	return &sessionStore{sessions: map[string]struct{}{}}
}

// Generate mints and remembers a new session id.
func (s *sessionStore) Generate() string {
	id := sessionPrefix + uuid.NewString()
	s.mu.Lock()
	s.sessions[id] = struct{}{}
	s.mu.Unlock()
	return id
}

// Validate accepts only ids this store minted and has not forgotten.
func (s *sessionStore) Validate(id string) (bool, error) {
	if !strings.HasPrefix(id, sessionPrefix) {
		return false, fmt.Errorf("invalid session id: %s", id)
	}
	s.mu.Lock()
	_, ok := s.sessions[id]
	s.mu.Unlock()
	if !ok {
		return false, fmt.Errorf("session not found: %s", id)
	}
	return false, nil
}

// Terminate forgets one session (client DELETE).
func (s *sessionStore) Terminate(id string) (bool, error) {
	s.mu.Lock()
	delete(s.sessions, id)
	s.mu.Unlock()
	return false, nil
}

// forgetAll forgets every session and returns how many there were.
func (s *sessionStore) forgetAll() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.sessions)
	s.sessions = map[string]struct{}{}
	return n
}

// count returns the number of live sessions.
func (s *sessionStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}
