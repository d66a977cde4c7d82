package compaction

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/store/files"
)

// TestPruneRestoreCRLF: a session with CRLF line ends (pi reads it: JSON
// allows the \r after the object) is pruned and restored byte for byte.
// The archive record ends "…"entry":{…}\r}": the original keeps its \r,
// which its SHA-256 covers, but reading the record took the entry without
// it, so every record failed its check and --restore put nothing back.
//
// Whitespace before the object is kept the same way.
func TestPruneRestoreCRLF(t *testing.T) {
	crlf := bytes.ReplaceAll(faultSession(&builder{}), []byte("\n"), []byte("\r\n"))
	lead := bytes.ReplaceAll(faultSession(&builder{}), []byte("\n{"), []byte("\n \t{"))
	pruneRestoreByteForByte(t, crlf)
	pruneRestoreByteForByte(t, lead)
}

func pruneRestoreByteForByte(t *testing.T, original []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	writeSession(t, path, original)
	s, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	plan, err := Prune(s, pruneSettings, faultNow)
	if err != nil || len(plan.Items) == 0 {
		t.Fatalf("prune: %+v %v", plan, err)
	}
	pruned, _ := os.ReadFile(path)
	if bytes.Equal(pruned, original) || bytes.Count(pruned, []byte("\r\n")) != bytes.Count(original, []byte("\r\n")) {
		t.Fatal("prune changed nothing or changed the line ends")
	}
	res, err := Restore(s)
	if err != nil || len(res.Refused) > 0 || res.Restored != len(plan.Items) {
		t.Fatalf("restore: %+v %v", res, err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, original) {
		t.Fatalf("not restored byte for byte:\n%q", got)
	}
}
