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
	return c != nil && c.Alive()
}

// PoolConnsAlive counts the pool's live connections to backend name.
func PoolConnsAlive(g *Gateway, name string) int {
	g.pool.mu.Lock()
	slots := append([]*poolSlot(nil), g.pool.slots[name]...)
	g.pool.mu.Unlock()
	n := 0
	for _, s := range slots {
		s.m.mu.Lock()
		c := s.m.conn
		s.m.mu.Unlock()
		if c != nil && c.Alive() {
			n++
		}
	}
	return n
}
