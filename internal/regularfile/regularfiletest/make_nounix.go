//go:build !unix

package regularfiletest

func mkfifo(string) error { return errUnsupported }
