package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// stampedVersion is the version the build stamps into the binary
// (make build: -ldflags "-X main.stampedVersion=$(VERSION)", a git
// describe). Empty in a plain go build, which keeps the version read from
// the toolchain's VCS information.
var stampedVersion string

func init() {
	if stampedVersion != "" {
		version = stampedVersion
	}
}

// newVersionCommand is `pith version`, for whoever looks for a command
// rather than the --version flag; both print the same line.
func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print pith's version (as --version does)",
		Args:  positional(nil),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "pith %s\n", version)
			return err
		},
	}
}
