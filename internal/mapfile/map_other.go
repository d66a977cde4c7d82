//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package mapfile

import (
	"errors"
	"os"
)

// mapFile does not map here: Bytes reads instead.
func mapFile(*os.File, int64) ([]byte, error) { return nil, errors.New("no mapping on this platform") }
