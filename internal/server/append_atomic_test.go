package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAppendAllOrNothing: one Append is one write. Entries of mixed types
// (messages and custom entries) went to the session in runs, one write a
// run, so a call cancelled or failed between two runs left its first runs
// in the file while the client got an error — and a client that retried
// appended them twice. Here calls of 100 alternating entries run under
// short deadlines; each must leave all of its entries or none.
func TestAppendAllOrNothing(t *testing.T) {
	root := t.TempDir()
	h := startServer(t, testConfig(root))
	ctx := context.Background()
	s, err := h.client.Create(ctx, "atomic.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	const calls, per = 20, 100
	failed := 0
	for c := range calls {
		tag := fmt.Sprintf("call-%02d", c)
		entries := make([]json.RawMessage, per)
		for i := range entries {
			if i%2 == 0 {
				entries[i] = json.RawMessage(fmt.Sprintf(`{"type":"message","message":{"role":"user","content":[{"type":"text","text":"%s"}],"timestamp":1}}`, tag))
			} else {
				entries[i] = json.RawMessage(fmt.Sprintf(`{"type":"custom","customType":"note","data":{"tag":%q}}`, tag))
			}
		}
		// Deadlines from 1 to 20 ms: some calls finish, some are cut.
		cctx, cancel := context.WithTimeout(ctx, time.Duration(1+c)*time.Millisecond)
		_, err := s.AppendEntries(cctx, entries...)
		cancel()
		if err != nil {
			failed++
		}
	}
	// Let the calls the server still runs finish: a no-op append takes
	// the session's lock after them.
	if _, err := s.AppendEntries(ctx, json.RawMessage(`{"type":"custom","customType":"end","data":{}}`)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "atomic.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for c := range calls {
		tag := fmt.Sprintf("call-%02d", c)
		if n := strings.Count(string(data), `"`+tag+`"`); n != 0 && n != per {
			t.Errorf("%s left %d of its %d entries in the session", tag, n, per)
		}
	}
	t.Logf("%d of %d calls failed", failed, calls)
}
