package viewer_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/viewer"
)

// FuzzAPI feeds hostile session files to the viewer: whatever the file
// holds, every endpoint answers (200 with valid JSON, or a clean 4xx) for
// every entry and leaf, and nothing panics.
func FuzzAPI(f *testing.F) {
	demo, err := os.ReadFile(filepath.Join("..", "examples", "demo-session.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	// Small seeds: the fuzzer minimizes every input that finds new code,
	// and minimizing the whole 76 KB demo stalls it for minutes.
	lines := bytes.Split(demo, []byte("\n"))
	var small [][]byte
	for _, l := range lines {
		if len(l) < 700 {
			small = append(small, l)
		}
	}
	f.Add(bytes.Join(small, []byte("\n")))
	f.Add(bytes.Join(lines[:3], []byte("\n")))
	f.Add([]byte(lines[0]))
	f.Add(append(append([]byte{}, lines[0]...), []byte("\n"+
		`{"type":"compaction","id":"c1","parentId":"zz","timestamp":1,"summary":7,"firstKeptEntryId":"c1","tokensBefore":"x","details":{"readFiles":[1,{}],"hookTimeline":{}}}`+"\n"+
		`{"type":"message","id":"m1","parentId":"c1","message":{"role":"toolResult","prunedAt":"no","content":[{"type":"toolCall","arguments":"</script>"}]}}`+"\n"+
		`{"type":"branch_summary","id":"b1","parentId":"m1","fromId":"b1","summary":"<b>x</b>","fromHook":"yes"}`+"\n"+
		`{"type":"label","id":"l1","parentId":"b1","targetId":"nope","label":["a"]}`+"\n")...))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "s.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		h, err := viewer.New(viewer.Options{Path: path, Settings: testSettings})
		if err != nil {
			return // not a session file: refused in one error, as it should be
		}
		defer h.Close()
		file, err := session.Load(path)
		if err != nil {
			t.Fatalf("the viewer opened what session.Load refuses: %v", err)
		}
		get := func(u string) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", u, nil)
			req.Host = "127.0.0.1"
			h.ServeHTTP(rec, req)
			switch {
			case rec.Code == http.StatusOK:
				if !json.Valid(rec.Body.Bytes()) {
					t.Fatalf("%s: invalid JSON: %.200s", u, rec.Body.String())
				}
			case rec.Code >= 500:
				t.Fatalf("%s: %d %s", u, rec.Code, rec.Body.String())
			}
		}
		for _, u := range []string{"/api/session", "/api/tree?limit=1000", "/api/context", "/api/compactions"} {
			get(u)
		}
		for i, e := range file.Entries {
			if i == 50 {
				break
			}
			id := url.QueryEscape(e.ID)
			get("/api/entry?id=" + id)
			get("/api/context?leaf=" + id)
			get("/api/compaction?id=" + id)
		}
	})
}
