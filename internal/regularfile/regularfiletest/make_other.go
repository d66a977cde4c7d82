//go:build !linux

package regularfiletest

import "errors"

var errUnsupported = errors.New("regularfiletest: not on this system")

func mknull(string) error { return errUnsupported }
