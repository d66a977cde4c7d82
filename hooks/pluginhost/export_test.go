package pluginhost

import "crypto/x509"

// PeerCertificate is the certificate the running instance of s presented
// over TLS, or nil.
func PeerCertificate(s *Supervisor) *x509.Certificate {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inst == nil {
		return nil
	}
	return s.inst.peerCert.Load()
}
