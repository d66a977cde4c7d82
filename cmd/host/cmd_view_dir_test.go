package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestViewDirectory: `pith view DIR` on a directory laid out as pi's
// sessions directory (<cwd-encoded>/<time>_<id>.jsonl) lists every session
// by project — the cwd its header names — newest first, opens each, and
// follows one live while it is appended to. A link leading out of the
// directory is neither listed nor opened. Before, the command refused a
// directory ("is not a regular file").
func TestViewDirectory(t *testing.T) {
	demo, err := os.ReadFile("../../examples/demo-session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	body := demo[strings.IndexByte(string(demo), '\n')+1:]
	dir := t.TempDir()
	write := func(project, cwd, ts, id string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, project), 0o755); err != nil {
			t.Fatal(err)
		}
		name := project + "/" + strings.NewReplacer(":", "-", ".", "-").Replace(ts) + "_" + id + ".jsonl"
		header := fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":%q,"cwd":%q}`+"\n", id, ts, cwd)
		if err := os.WriteFile(filepath.Join(dir, name), append([]byte(header), body...), 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	older := write("--home-dev-ledger--", "/home/dev/ledger", "2026-11-01T08:00:00.000Z", "aaaaaaaa-0000-4000-8000-000000000001")
	newer := write("--home-dev-ledger--", "/home/dev/ledger", "2026-11-02T09:00:00.000Z", "aaaaaaaa-0000-4000-8000-000000000002")
	other := write("--home-dev-my-app--", "/home/dev/my-app", "2026-10-30T10:00:00.000Z", "bbbbbbbb-0000-4000-8000-000000000003")
	write("--x--", "<img src=x onerror=alert(1)>", "2026-10-01T00:00:00.000Z", "<script>alert(2)")
	outside := filepath.Join(t.TempDir(), "secret.jsonl")
	if err := os.WriteFile(outside, demo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "--home-dev-ledger--", "escape.jsonl")); err != nil {
		t.Fatal(err)
	}

	cmd := newViewCommand()
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{dir})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	var url string
	for deadline := time.Now().Add(30 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if s := out.String(); strings.HasSuffix(s, "\n") {
			url = strings.TrimSpace(s)
		}
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("printed %q, want the page's loopback URL", out.String())
	}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, index := get("")
	if code != http.StatusOK {
		t.Fatalf("index: %d %s", code, index)
	}
	at := func(s string) int {
		i := strings.Index(index, s)
		if i < 0 {
			t.Fatalf("the index does not show %q:\n%s", s, index)
		}
		return i
	}
	if !(at("<h2>/home/dev/ledger</h2>") < at(newer) && at(newer) < at(older) && at(older) < at("<h2>/home/dev/my-app</h2>") && at("<h2>/home/dev/my-app</h2>") < at(other)) {
		t.Fatalf("the index is not by project, newest first:\n%s", index)
	}
	at("2026-11-02T09:00:00.000Z aaaaaaaa-0000-4000-8000-000000000002")
	if strings.Contains(index, "<img") || strings.Contains(index, "<script") {
		t.Fatalf("a header's cwd or id reached the index as markup:\n%s", index)
	}
	if strings.Contains(index, "escape") {
		t.Fatalf("a link leading out of the directory is listed:\n%s", index)
	}
	if code, _ := get("s/--home-dev-ledger--/escape.jsonl/api/session"); code != http.StatusNotFound {
		t.Fatalf("a link leading out of the directory: %d, want 404", code)
	}
	code, session := get("s/" + newer + "/api/session")
	if code != http.StatusOK || !strings.Contains(session, `"entries":37`) {
		t.Fatalf("a session of the directory: %d %s", code, session)
	}

	// Appended to, as pi writes: the page's data follows.
	f, err := os.OpenFile(filepath.Join(dir, newer), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"type":"label","id":"ffff0001","parentId":"9b22e738","timestamp":"2026-11-02T10:00:00.000Z","targetId":"9b22e738","label":"live"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, s := get("s/" + newer + "/api/session"); strings.Contains(s, `"entries":38`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an append to a session of the directory did not reach its page")
		}
	}
}
