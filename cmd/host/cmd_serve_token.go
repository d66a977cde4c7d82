package main

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/pith-dev/pith/internal/server"
	"github.com/spf13/cobra"
)

// newHashTokenCommand is `pith serve hash-token`: the only way a token
// enters the configuration is as its SHA-256, so the file never holds a
// usable credential.
func newHashTokenCommand() *cobra.Command {
	var generate bool
	var name, prefix string
	cmd := &cobra.Command{
		Use:   "hash-token",
		Short: "Print the SHA-256 of a bearer token for server.tokens (reads the token from stdin, or --generate one)",
		Long: `Prints a server.tokens entry for a bearer token: its name, prefix and the
token's SHA-256. The token is read from the first line of stdin; with
--generate a new random token (32 bytes, base64url) is made and printed
once on stderr — give it to the client, it is not stored anywhere.

  pith serve hash-token --generate --name team-a --prefix team-a/`,
		Args: positional(nil),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var tok string
			if generate {
				b := make([]byte, 32)
				if _, err := rand.Read(b); err != nil {
					return err
				}
				tok = base64.RawURLEncoding.EncodeToString(b)
				fmt.Fprintf(cmd.ErrOrStderr(), "token (shown once): %s\n", tok)
			} else {
				line, err := bufio.NewReader(io.LimitReader(cmd.InOrStdin(), 64<<10)).ReadString('\n')
				if err != nil && !errors.Is(err, io.EOF) {
					return fmt.Errorf("read the token from stdin: %w", err)
				}
				tok = strings.TrimSpace(line)
				if tok == "" {
					return errors.New("no token on stdin (or use --generate)")
				}
			}
			out := cmd.OutOrStdout()
			// sha256 last: a save of the file stopped anywhere inside the
			// entry leaves it without a whole sum, which is invalid, never
			// a token without its prefix (every session).
			fmt.Fprintf(out, "- name: %s\n  prefix: %q\n  sha256: %s\n", name, prefix, server.HashToken(tok))
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&generate, "generate", false, "make a new random token")
	fl.StringVar(&name, "name", "client", "the token's name (server.tokens[].name)")
	fl.StringVar(&prefix, "prefix", "", `the sessions it may touch, e.g. "team-a/" ("" for all)`)
	return cmd
}
