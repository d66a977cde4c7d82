package server

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSessionOverwrittenSameSize: the file of an open session is
// overwritten in place with another session of exactly the same size.
// The daemon refuses the next calls, as for an overwrite of another size;
// it went on serving the first session's entries, since only the size
// told it that the file had changed.
func TestSessionOverwrittenSameSize(t *testing.T) {
	root := t.TempDir()
	h := startServer(t, testConfig(root))
	ctx := context.Background()
	s, err := h.client.Create(ctx, "team/s1.jsonl", "/work")
	if err != nil {
		t.Fatal(err)
	}
	other, err := h.client.Create(ctx, "team/s2.jsonl", "/work")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, userMsg("same", 200)); err != nil {
		t.Fatal(err)
	}
	if _, err := other.AppendMessages(ctx, userMsg("same", 200)); err != nil {
		t.Fatal(err)
	}
	p1, p2 := filepath.Join(root, "team", "s1.jsonl"), filepath.Join(root, "team", "s2.jsonl")
	data, err := os.ReadFile(p2)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p1); err != nil || fi.Size() != int64(len(data)) {
		t.Fatalf("want two sessions of one size: %v %v", fi, err)
	}
	if _, err := s.Context(ctx); err != nil {
		t.Fatal(err)
	}
	// A write in a later clock tick than the daemon's last look (coarse
	// file system clocks give writes within one tick one change time).
	for {
		fi, _ := os.Stat(p1)
		probe := filepath.Join(root, "tick")
		os.WriteFile(probe, nil, 0o644)
		if pi, err := os.Stat(probe); err == nil && pi.ModTime().After(fi.ModTime()) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	f, err := os.OpenFile(p1, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for i := range 2 {
		if c, err := s.Context(ctx); err == nil {
			t.Fatalf("call %d: served %d messages from a file that now holds another session", i+1, len(c.Messages))
		}
	}
}
