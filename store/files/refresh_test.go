package files_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/store/files"
)

// TestBehindAfterRefreshOfAnUnfinishedLine: a last line nobody finishes (a
// crash left it) keeps the file longer than what the Store reads; once
// Refresh has seen the file at that size, Behind no longer reports it, so
// a reader does not refresh on every call — and reports it again when the
// file changes.
func TestBehindAfterRefreshOfAnUnfinishedLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	st, err := files.Create(path, "/w", files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"type":"message","id":"x","par`); err != nil {
		t.Fatal(err)
	}
	if !st.Behind() {
		t.Fatal("Behind is false with bytes past what the Store read")
	}
	if _, err := st.Refresh(); err != nil {
		t.Fatal(err)
	}
	if st.Behind() {
		t.Fatal("still Behind after Refresh saw the file at this size")
	}
	if _, err := f.WriteString(`e`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !st.Behind() {
		t.Fatal("Behind is false after the file grew again")
	}
}
