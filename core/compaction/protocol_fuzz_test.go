package compaction

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

// sessionFromShape builds a session from fuzz bytes: each byte adds a
// user message, a large or small tool result, a copy of the previous line
// (a duplicate id), or an already pruned result.
func sessionFromShape(shape []byte) []byte {
	b := &builder{}
	b.user(5)
	for i, c := range shape {
		switch c % 5 {
		case 0:
			b.user(int(c)%20 + 1)
		case 1:
			b.result("c", "bash", 300+int(c)*10)
		case 2:
			b.result("c", "bash", int(c)%40+1)
		case 3:
			if len(b.lines) > 0 {
				b.lines = append(b.lines, b.lines[len(b.lines)-1])
			}
		case 4:
			b.msg(`{"role":"toolResult","toolCallId":"c","toolName":"bash","content":"[Output truncated - 9 tokens]","prunedAt":` + string(rune('1'+i%9)) + `}`)
		}
	}
	return b.data()
}

// FuzzRewriteProtocol prunes and restores sessions with duplicate ids,
// torn tails, pruned entries, CRLF line ends and indented lines, against archives with torn and forged
// records. Nothing may panic; a failed step leaves the session as it was;
// prune then restore gives back every entry Pith pruned byte for byte and
// keeps the torn tail's bytes; the archive only grows by whole verified
// records.
func FuzzRewriteProtocol(f *testing.F) {
	valid := ArchiveRecord{Pos: 2, ID: "00000003", Field: "message.content", PrunedAt: 1, Original: []byte(`{"type":"message","id":"00000003"}`)}.Marshal()
	f.Add([]byte{1, 1, 1, 0, 2}, []byte(""), []byte(""))
	f.Add([]byte{1, 3, 1, 1, 0}, []byte(`{"type":"mess`), valid)
	f.Add([]byte{4, 1, 1, 1, 0}, []byte(""), append(bytes.Clone(valid), `{"pos":1,"id":"x`...))
	f.Add([]byte{1, 1, 4, 1}, []byte("\x00garbage"), bytes.Replace(valid, []byte("message"), []byte("massage"), 1))
	f.Add([]byte{1, 6, 11, 16, 21}, []byte(""), []byte(`{"id":"00000002","prunedAt":1,"entry":{"id":"00000002","type":"message"}}`+"\n"))
	f.Add([]byte{0x81, 1, 1, 0, 2}, []byte(""), []byte(""))
	f.Add([]byte{0x41, 1, 1, 0, 2}, []byte(""), []byte(""))
	f.Fuzz(func(t *testing.T, shape, tail, archive []byte) {
		if len(shape) > 64 || len(tail) > 256 || len(archive) > 4096 {
			return
		}
		data := sessionFromShape(shape)
		if len(shape) > 0 && shape[0]&0x80 != 0 {
			// Line formats pi reads too: CRLF ends, whitespace before
			// the object.
			data = bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n"))
		}
		if len(shape) > 0 && shape[0]&0x40 != 0 {
			data = bytes.ReplaceAll(data, []byte("\n{"), []byte("\n {"))
		}
		data = append(data, tail...)
		orig, err := session.Parse(data)
		if err != nil {
			return
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "s.jsonl")
		os.WriteFile(path, data, 0o644)
		if len(archive) > 0 {
			os.WriteFile(path+ArchiveSuffix, archive, 0o644)
		}
		s, err := files.Open(path, files.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		plan, err := Prune(s, PruneSettings{Protect: 100, Minimum: 1}, faultNow)
		after, _ := os.ReadFile(path)
		if err != nil {
			if !errors.Is(err, session.ErrUnchanged) || !bytes.Equal(after, data) {
				t.Fatalf("prune failed and the session is not as before: %v", err)
			}
			return
		}
		pruned := map[string]bool{}
		for _, it := range plan.Items {
			pruned[it.EntryID] = true
		}
		arch, _ := os.ReadFile(path + ArchiveSuffix)
		kept := archive[:completeRecords(archive)]
		if len(plan.Items) == 0 {
			kept = archive // nothing pruned: the archive is not touched
		}
		if !bytes.HasPrefix(arch, kept) {
			t.Fatal("the archive lost complete records")
		}
		for _, l := range bytes.Split(bytes.TrimSuffix(arch[len(kept):], []byte("\n")), []byte("\n")) {
			if len(l) == 0 {
				continue
			}
			if _, err := ParseArchiveRecord(l); err != nil {
				t.Fatalf("appended record %q: %v", l, err)
			}
		}
		if _, err := Restore(s); err != nil {
			t.Fatal(err)
		}
		final, err := session.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(final.Entries) != len(orig.Entries) {
			t.Fatalf("%d entries became %d", len(orig.Entries), len(final.Entries))
		}
		for i, e := range orig.Entries {
			if e.Get("message.prunedAt").Exists() {
				continue // pruned before Pith looked: the fuzz archive may restore it
			}
			if !bytes.Equal(final.Entries[i].Raw, e.Raw) {
				t.Fatalf("entry %d (%s, pruned now: %v) is not the original after restore", i, e.ID, pruned[e.ID])
			}
		}
		// Every non-blank line of the tail is kept (blank lines are not).
		for _, l := range bytes.Split(tail, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 && !bytes.Contains(after, l) {
				t.Fatalf("the tail's line %q is gone", l)
			}
		}
	})
}
