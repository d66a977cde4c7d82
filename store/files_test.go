package store_test

import (
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/storetest"
)

func TestFilesConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() store.Store {
		dir := t.TempDir()
		return func() store.Store {
			s, err := store.OpenFiles(dir, session.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}
