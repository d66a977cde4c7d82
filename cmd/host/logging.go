package main

import (
	"io"

	"github.com/hashicorp/go-hclog"
)

// warnLogger reports warnings (skipped lines and the like) on stderr.
func warnLogger(w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "pith", Level: hclog.Warn, Output: w, DisableTime: true})
}
