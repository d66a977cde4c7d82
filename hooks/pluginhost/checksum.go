package pluginhost

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/hashicorp/go-plugin"

	"github.com/pith-dev/pith/internal/checksum"
)

// checksum verifies the binary against the configured sha256 before it is
// started and returns go-plugin's check of the same, which runs again right
// before exec and so narrows the window in which the file could be
// swapped; nil when no checksum is configured.
func (s Spec) checksum() (*plugin.SecureConfig, error) {
	if s.SHA256 == "" {
		return nil, nil
	}
	want, err := checksum.VerifyFile(s.Path, s.SHA256)
	var mismatch *checksum.MismatchError
	switch {
	case errors.As(err, &mismatch):
		return nil, fmt.Errorf("plugin %q: %w: %s has sha256 %x, the configuration says %x; not started", s.Name, ErrChecksumMismatch, s.Path, mismatch.Got, mismatch.Want)
	case errors.Is(err, checksum.ErrMalformed):
		return nil, fmt.Errorf("plugin %q: %w", s.Name, err)
	case err != nil:
		return nil, fmt.Errorf("plugin %q: checksum %s: %w", s.Name, s.Path, err)
	}
	return &plugin.SecureConfig{Checksum: want, Hash: sha256.New()}, nil
}
