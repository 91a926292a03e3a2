package proxy

import (
	"sync"
)

// maxSessions bounds the session ids the proxy remembers.
const maxSessions = 100000

// sessions are the MCP session ids seen through the proxy, and those a
// session_expire fault expired: the proxy then answers 404 for them, as
// the backend would after forgetting them, although the backend itself
// still knows them.
type sessions struct {
	mu      sync.Mutex
	known   map[string]bool
	expired map[string]bool
}

func (s *sessions) seen(id string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.expired[id] {
		return
	}
	if s.known == nil || len(s.known) >= maxSessions {
		s.known = map[string]bool{}
	}
	s.known[id] = true
}

func (s *sessions) isExpired(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return id != "" && s.expired[id]
}

// expireAll expires every known session and returns their ids.
func (s *sessions) expireAll() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.expired == nil || len(s.expired) >= maxSessions {
		s.expired = map[string]bool{}
	}
	ids := make([]string, 0, len(s.known))
	for id := range s.known {
		s.expired[id] = true
		ids = append(ids, id)
	}
	s.known = nil
	return ids
}

// ExpireSessions makes every session seen so far answer 404 through the
// proxy (legacy SSE: their event streams end), as a backend that forgot
// them would; it returns how many. The gateway must start new sessions.
func (p *Proxy) ExpireSessions() int {
	ids := p.sessions.expireAll()
	for _, id := range ids {
		if st := p.streams.Get(id); st != nil {
			st.Cancel()
		}
	}
	if len(ids) > 0 {
		p.logger.Info("sessions expired", "count", len(ids))
	}
	return len(ids)
}
