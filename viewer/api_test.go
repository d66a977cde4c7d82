package viewer_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
	"github.com/pith-dev/pith/viewer"
	"github.com/tidwall/sjson"
)

var testSettings = viewer.Settings{ContextWindow: 200000, ReserveTokens: 16384, AutoCompaction: true}

func serve(t *testing.T, path string) (*viewer.Handler, *httptest.Server) {
	t.Helper()
	h, err := viewer.New(viewer.Options{Path: path, Settings: testSettings, Debounce: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); srv.Close() })
	return h, srv
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK && v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("%s: %v\n%s", url, err, body)
		}
	}
	return resp.StatusCode
}

func TestAPIOnTheCompactedDemo(t *testing.T) {
	path := demoWithCompaction(t)
	_, srv := serve(t, path)

	var s struct {
		Entries int    `json:"entries"`
		LeafID  string `json:"leafId"`
		LeafRow int    `json:"leafRow"`
	}
	getJSON(t, srv.URL+"/api/session", &s)
	if s.Entries != 38 || s.LeafRow != 37 || s.LeafID == "" {
		t.Fatalf("session = %+v, want 38 entries with the compaction as leaf on row 37", s)
	}

	var tree struct {
		Total int `json:"total"`
		Rows  []struct {
			Row    int    `json:"row"`
			ID     string `json:"id"`
			Type   string `json:"type"`
			Leaf   bool   `json:"leaf"`
			OnPath bool   `json:"onPath"`
		} `json:"rows"`
	}
	getJSON(t, srv.URL+"/api/tree?offset=30&limit=100", &tree)
	if tree.Total != 38 || len(tree.Rows) != 8 || tree.Rows[0].Row != 30 {
		t.Fatalf("tree page: total %d, %d rows from %d", tree.Total, len(tree.Rows), tree.Rows[0].Row)
	}
	last := tree.Rows[len(tree.Rows)-1]
	if last.Type != session.TypeCompaction || !last.Leaf || !last.OnPath || last.ID != s.LeafID {
		t.Errorf("last row = %+v, want the compaction leaf", last)
	}

	var ctx struct {
		LeafID      string `json:"leafId"`
		CompactedBy string `json:"compactedBy"`
		Threshold   int    `json:"threshold"`
		Summarized  int    `json:"summarizedMessages"`
		Messages    []struct {
			Part   string `json:"part"`
			Tokens int    `json:"tokens"`
		} `json:"messages"`
	}
	getJSON(t, srv.URL+"/api/context", &ctx)
	if ctx.LeafID != s.LeafID || ctx.CompactedBy != s.LeafID || ctx.Threshold != 200000-16384 || ctx.Summarized == 0 {
		t.Fatalf("context = %+v", ctx)
	}
	if len(ctx.Messages) < 2 || ctx.Messages[0].Part != "summary" || ctx.Messages[1].Part != "kept" {
		t.Fatalf("context parts = %+v, want the summary then kept messages", ctx.Messages)
	}
	// Before the compaction, the same path has no summary.
	ctx.CompactedBy, ctx.Messages = "", nil
	getJSON(t, srv.URL+"/api/context?leaf=59fdc8cc", &ctx)
	if ctx.CompactedBy != "" || len(ctx.Messages) != 1 || ctx.Messages[0].Part != "message" {
		t.Fatalf("context at the first message = %+v", ctx)
	}

	var c struct {
		TokensBefore int      `json:"tokensBefore"`
		TokensAfter  int      `json:"tokensAfter"`
		SplitTurn    bool     `json:"splitTurn"`
		Read         []string `json:"readFiles"`
		CutPoint     *struct {
			ID string `json:"id"`
		} `json:"cutPoint"`
		Summary string `json:"summary"`
	}
	getJSON(t, srv.URL+"/api/compaction?id="+s.LeafID, &c)
	if c.TokensBefore <= c.TokensAfter || c.TokensAfter == 0 || c.CutPoint == nil || c.Summary == "" || len(c.Read) == 0 {
		t.Fatalf("compaction = %+v", c)
	}
}

func TestAPIRefusals(t *testing.T) {
	_, srv := serve(t, filepath.Join("..", "examples", "demo-session.jsonl"))
	for _, tc := range []struct {
		url  string
		want int
	}{
		{"/api/entry?id=nope", http.StatusNotFound},
		{"/api/entry", http.StatusNotFound},
		{"/api/context?leaf=nope", http.StatusNotFound},
		{"/api/compaction?id=59fdc8cc", http.StatusNotFound}, // a message, not a compaction
		{"/api/tree?offset=-1", http.StatusBadRequest},
		{"/api/tree?limit=x", http.StatusBadRequest},
		{"/api/tree?offset=99999999", http.StatusOK}, // past the end: no rows
	} {
		if got := getJSON(t, srv.URL+tc.url, nil); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.url, got, tc.want)
		}
	}
	// A page is never larger than the cap, whatever it asks for.
	var tree struct {
		Rows []json.RawMessage `json:"rows"`
	}
	getJSON(t, srv.URL+"/api/tree?limit=100000000", &tree)
	if len(tree.Rows) != 37 {
		t.Errorf("rows = %d", len(tree.Rows))
	}
	// A name that is not loopback by definition is refused (DNS rebinding).
	req, _ := http.NewRequest("GET", srv.URL+"/api/session", nil)
	req.Host = "attacker.example:80"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("foreign Host: status %d", resp.StatusCode)
	}
	// Writes are not served at all: the viewer is read-only.
	resp, err = http.Post(srv.URL+"/api/entry?id=59fdc8cc", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: status %d", resp.StatusCode)
	}
}

// TestLiveEvents: an append and an atomic rewrite of the file (as prune
// does) each reach an open event stream as a new version, and a pruned
// output is shown with its original from the archive.
func TestLiveEvents(t *testing.T) {
	path := demoWithCompaction(t)
	_, srv := serve(t, path)
	resp, err := http.Get(srv.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- d
			}
		}
		close(events)
	}()
	next := func(what string) map[string]int {
		t.Helper()
		select {
		case d, ok := <-events:
			if !ok {
				t.Fatalf("%s: the stream ended", what)
			}
			var v map[string]int
			if err := json.Unmarshal([]byte(d), &v); err != nil {
				t.Fatal(err)
			}
			return v
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no event", what)
		}
		return nil
	}
	if v := next("first"); v["version"] != 1 || v["entries"] != 38 {
		t.Fatalf("first event %v", v)
	}
	appendUser(t, path, "one more")
	if v := next("after append"); v["entries"] != 39 {
		t.Fatalf("after append %v", v)
	}

	// Prune one tool output as the prune rewrite leaves it (its original
	// in the archive, the notice in its place, the file replaced by a
	// rename), written out here byte by byte: the file format is the
	// contract, not the current Go API of pruning.
	f, err := session.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var target *session.Entry
	for _, e := range f.Entries {
		if e.Role() == session.RoleToolResult {
			target = e
			break
		}
	}
	stamp := time.Now().UnixMilli()
	record := fmt.Sprintf(`{"id":%q,"prunedAt":%d,"entry":%s}`+"\n", target.ID, stamp, target.Raw)
	if err := os.WriteFile(compaction.ArchivePath(path), []byte(record), 0o644); err != nil {
		t.Fatal(err)
	}
	line, _ := sjson.SetRawBytes(target.Raw, "message.content", []byte(`[{"type":"text","text":"`+compaction.PruneNotice(100)+`"}]`))
	line, _ = sjson.SetBytes(line, "message.prunedAt", stamp)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, target.Raw, line, 1)
	if err := files.WriteAtomic(path, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
		t.Fatal(err)
	}
	var e struct {
		Pruned   bool            `json:"pruned"`
		Archived json.RawMessage `json:"archived"`
		Message  struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	// Each event is a new reading; one of them (not necessarily the first:
	// the append may still have had one pending) has the pruned file.
	for !e.Pruned {
		next("after prune")
		getJSON(t, srv.URL+"/api/entry?id="+target.ID, &e)
	}
	if !e.Pruned || !strings.Contains(string(e.Message.Content), "Output truncated") {
		t.Fatalf("pruned entry = %+v", e)
	}
	if want := target.Get("message.content").Raw; !strings.Contains(string(e.Archived), want[:min(len(want), 60)]) {
		t.Errorf("archived original missing: %s", e.Archived)
	}
}

// TestTimelineContract: a compaction whose details carry hookTimeline (the
// format doc.go gives) has it served as is; the page draws it.
func TestTimelineContract(t *testing.T) {
	path := demoWithCompaction(t)
	st, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	timeline := `[{"plugin":"guard","event":"session_before_compact","durationMs":3,"result":"cancel","reason":"label no-compact on the path"}]`
	es, err := st.Append(session.Draft{Type: session.TypeCompaction, Fields: map[string]any{
		"summary": "s", "firstKeptEntryId": "59fdc8cc", "tokensBefore": 10,
		"details": map[string]any{"readFiles": []string{}, "modifiedFiles": []string{}, "hookTimeline": json.RawMessage(timeline)},
	}})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, srv := serve(t, path)
	var c struct {
		Timeline json.RawMessage `json:"timeline"`
	}
	getJSON(t, srv.URL+"/api/compaction?id="+es[0].ID, &c)
	if string(c.Timeline) != timeline {
		t.Fatalf("timeline = %s", c.Timeline)
	}
}
