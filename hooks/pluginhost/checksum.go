package pluginhost

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/go-plugin"
)

// checksum verifies the binary against the configured sha256 before it is
// started and returns go-plugin's check of the same, which runs again right
// before exec and so narrows the window in which the file could be
// swapped; nil when no checksum is configured.
func (s Spec) checksum() (*plugin.SecureConfig, error) {
	if s.SHA256 == "" {
		return nil, nil
	}
	want, err := decodeSHA256(s.SHA256)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: %w", s.Name, err)
	}
	got, err := fileSHA256(s.Path)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: checksum %s: %w", s.Name, s.Path, err)
	}
	if !bytesEqual(got, want) {
		return nil, fmt.Errorf("plugin %q: %w: %s has sha256 %x, the configuration says %x; not started", s.Name, ErrChecksumMismatch, s.Path, got, want)
	}
	return &plugin.SecureConfig{Checksum: want, Hash: sha256.New()}, nil
}

func decodeSHA256(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("sha256 %q is not 64 hex digits", s)
	}
	return b, nil
}

func fileSHA256(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

func bytesEqual(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	var d byte
	for i := range a {
		d |= a[i] ^ b[i]
	}
	return d == 0
}
