package postgres_test

import (
	"context"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/pgtest"
	"github.com/pith-dev/pith/store/postgres"
	"github.com/pith-dev/pith/store/storetest"
)

// TestExportWithinSnapshot: an append another host commits after the
// bound was asked, before the lines are read, is not read: the size and
// the lines come from one snapshot, so the read takes exactly the bytes
// the bound admitted. (The conformance suite's append only races the
// read; here it has committed before the read begins.)
func TestExportWithinSnapshot(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	open := func() *postgres.Store {
		s, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	if err := a.Create(ctx, "snap.jsonl", []byte(storetest.Sample)); err != nil {
		t.Fatal(err)
	}
	var asked int64
	got, err := a.ExportWithin(ctx, "snap.jsonl", func(n int64) error {
		asked = n
		d := session.Draft{Type: session.TypeMessage, Fields: map[string]any{"message": map[string]any{"role": "user", "content": "meanwhile", "timestamp": 1}}}
		_, err := b.Append(ctx, "snap.jsonl", "aaaa0002", d)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != storetest.Sample || asked != int64(len(got)) {
		t.Fatalf("export with an append committed meanwhile = %d bytes, asked about %d; want the %d bytes before it", len(got), asked, len(storetest.Sample))
	}
	if now, err := a.Export(ctx, "snap.jsonl"); err != nil || len(now) <= len(storetest.Sample) {
		t.Fatalf("the append did not commit: %d bytes, %v", len(now), err)
	}
}
