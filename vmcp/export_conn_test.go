package vmcp

// BackendConnAlive reports whether the session's current connection to
// backend name is alive (false when it has none). Tests use it to wait,
// bounded, until the gateway has noticed a connection's death.
func BackendConnAlive(s *Session, name string) bool {
	m := s.members[name]
	if m == nil {
		return false
	}
	m.mu.Lock()
	c := m.conn
	m.mu.Unlock()
	return c != nil && c.alive()
}
