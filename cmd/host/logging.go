package main

import (
	"io"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/internal/termsafe"
)

// warnLogger reports warnings (skipped lines and the like) on stderr.
func warnLogger(w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "pith", Level: hclog.Warn, Output: termsafe.NewWriter(w), DisableTime: true})
}
