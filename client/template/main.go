// Command my-pith-agent is the start of a Go agent on `pith serve`: it
// opens a session (creating it when it is new) and prints the size of the
// context the agent would send to its model.
//
//	my-pith-agent -addr 127.0.0.1:7420 -session demo/hello.jsonl
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/pith-dev/pith/client"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7420", "the daemon's address: host:port or unix:/path (its server.listen)")
	session := flag.String("session", "demo/hello.jsonl", "the session file, relative to the daemon's sessions.root")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, *addr, *session, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "my-pith-agent:", err)
		os.Exit(1)
	}
}

// run is main without the flags, for the test.
func run(ctx context.Context, addr, path string, out io.Writer) error {
	var opts []client.Option
	if token := os.Getenv("PITH_TOKEN"); token != "" {
		// A daemon off this machine wants a token, and TLS too
		// (client.WithTLSFiles); the client refuses to send a token in
		// clear text anywhere but loopback or a unix socket.
		opts = append(opts, client.WithToken(token))
	}
	c, err := client.Dial(addr, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	s, err := c.Create(ctx, path, cwd) // opens it when it exists
	if err != nil {
		return err
	}
	defer s.Close(ctx)
	cc, err := s.Context(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "session %s (%s): %d messages, %d tokens of context\n", s.ID, s.Path, len(cc.Messages), cc.Tokens)
	return nil
}
