package server

// held is how many slots of kind the caller name holds now (tests).
func (s *Server) held(name string, kind slotKind) int {
	s.slots.mu.Lock()
	defer s.slots.mu.Unlock()
	return s.slots.n[slotKey{name, kind}]
}
