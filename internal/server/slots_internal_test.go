package server

// held is how many slots of kind the caller name holds now (tests).
func (s *Server) held(name string, kind slotKind) int {
	_, n := s.slots.Held(slotKey{name, kind})
	return n
}
