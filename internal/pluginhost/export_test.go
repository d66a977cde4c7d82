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

// HostAPIConnections is how many connections the host API of the running
// instance of s has accepted; -1 when no instance runs.
func HostAPIConnections(s *Supervisor) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inst == nil || s.inst.hostAPI.Load() == nil {
		return -1
	}
	return s.inst.hostAPI.Load().accepted.Load()
}

// HostAPIAddress is the host_api_address the running instance of s was
// given, "" when no instance runs.
func HostAPIAddress(s *Supervisor) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inst == nil || s.inst.hostAPI.Load() == nil {
		return ""
	}
	return s.inst.hostAPI.Load().address
}

// ActAsOlderHost makes the host send no host_api_address in Describe, as a
// host older than the field, until the test ends.
func ActAsOlderHost(t interface{ Cleanup(func()) }) {
	omitHostAPIAddress.Store(true)
	t.Cleanup(func() { omitHostAPIAddress.Store(false) })
}

// HostAPIServed is closed once the host API server of the running instance
// of s has stopped; nil when no instance runs.
func HostAPIServed(s *Supervisor) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inst == nil || s.inst.hostAPI.Load() == nil {
		return nil
	}
	return s.inst.hostAPI.Load().served
}

// SocketDir is the private directory go-plugin made for the sockets of the
// running instance of s, "" when no instance runs.
func SocketDir(s *Supervisor) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inst == nil {
		return ""
	}
	return s.inst.socketDir
}
