package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pith-dev/pith/sdk"
	"github.com/pith-dev/pith/sdk/sdktest"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "audit-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary, err = sdktest.BuildTo(dir, ".")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var fixedNow = func() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) }

const compactionEntry = `{"type":"compaction","id":"c0ffee01","parentId":"a1","timestamp":"2026-11-30T09:00:00Z","summary":"## Goal\nfix the bug — ünïcode","firstKeptEntryId":"a7","tokensBefore":51234}`

const branchEntry = `{"type":"branch_summary","id":"b5","parentId":"a3","timestamp":"2026-11-30T09:00:00Z","fromId":"a9","summary":"tried X"}`

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRecords(t *testing.T) {
	tests := []struct {
		name           string
		includeSummary bool
		send           func(h *sdktest.Harness) error
		want           string
	}{
		{
			name: "compaction",
			send: func(h *sdktest.Harness) error {
				return h.Compact(context.Background(), &sdk.CompactEvent{SessionID: "s1", CompactionEntry: json.RawMessage(compactionEntry)})
			},
			want: `{"time":"2026-11-30T09:00:00Z","event":"session_compact","sessionId":"s1","entryId":"c0ffee01","firstKeptEntryId":"a7","fromExtension":false,"tokensBefore":51234,"summaryChars":29}`,
		},
		{
			name:           "compaction with summary",
			includeSummary: true,
			send: func(h *sdktest.Harness) error {
				return h.Compact(context.Background(), &sdk.CompactEvent{SessionID: "s1", CompactionEntry: json.RawMessage(compactionEntry), FromExtension: true})
			},
			want: `{"time":"2026-11-30T09:00:00Z","event":"session_compact","sessionId":"s1","entryId":"c0ffee01","firstKeptEntryId":"a7","fromExtension":true,"tokensBefore":51234,"summaryChars":29,"summary":"## Goal\nfix the bug — ünïcode"}`,
		},
		{
			name: "navigation with summary",
			send: func(h *sdktest.Harness) error {
				return h.Tree(context.Background(), &sdk.TreeEvent{SessionID: "s2", NewLeafID: "a3", OldLeafID: "a9", SummaryEntry: json.RawMessage(branchEntry)})
			},
			want: `{"time":"2026-11-30T09:00:00Z","event":"session_tree","sessionId":"s2","entryId":"b5","newLeafId":"a3","oldLeafId":"a9","fromExtension":false,"summaryChars":7}`,
		},
		{
			name: "navigation without summary",
			send: func(h *sdktest.Harness) error {
				return h.Tree(context.Background(), &sdk.TreeEvent{SessionID: "s2", NewLeafID: "a3", OldLeafID: "a9"})
			},
			want: `{"time":"2026-11-30T09:00:00Z","event":"session_tree","sessionId":"s2","newLeafId":"a3","oldLeafId":"a9","fromExtension":false}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			a, err := open(path, tc.includeSummary, fixedNow)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close() })
			if err := tc.send(sdktest.InProcess(t, a)); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want+"\n" {
				t.Fatalf("audit line\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestAppendsToExistingFileAndRejectsBadEntry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, []byte(`{"earlier":"line"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := open(path, false, fixedNow)
	if err != nil {
		t.Fatal(err)
	}
	h := sdktest.InProcess(t, a)
	if err := h.Compact(context.Background(), &sdk.CompactEvent{SessionID: "s1", CompactionEntry: json.RawMessage(`{"id":`)}); err == nil {
		t.Fatal("a malformed compaction entry must be reported")
	}
	if err := h.Compact(context.Background(), &sdk.CompactEvent{SessionID: "s1", CompactionEntry: json.RawMessage(compactionEntry)}); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Compact(context.Background(), &sdk.CompactEvent{SessionID: "s1"}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("after Close: %v, want an error saying the file is closed", err)
	}
	lines := readLines(t, path)
	if len(lines) != 2 || lines[0]["earlier"] != "line" || lines[1]["entryId"] != "c0ffee01" {
		t.Fatalf("file lines: %v", lines)
	}
}

func TestConcurrentEventsNeverInterleave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a, err := open(path, true, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	h := sdktest.InProcess(t, a)
	long := strings.Repeat("x", 64<<10) // larger than a pipe buffer
	entry, _ := json.Marshal(map[string]any{"type": "compaction", "id": "c1", "summary": long})
	const n = 32
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.Compact(context.Background(), &sdk.CompactEvent{SessionID: fmt.Sprint(i), CompactionEntry: entry}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	lines := readLines(t, path)
	if len(lines) != n {
		t.Fatalf("%d lines, want %d", len(lines), n)
	}
	for _, l := range lines {
		if l["summary"] != long {
			t.Fatal("a summary was torn")
		}
	}
}

func TestSubprocess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	h := sdktest.Subprocess(t, binary, sdktest.WithArgs("--file", path))
	for _, ev := range []sdk.EventID{sdk.EventCompact, sdk.EventTree} {
		if !h.Plugin.Implements(ev) {
			t.Fatalf("audit must handle %s", ev)
		}
	}
	if h.Plugin.Implements(sdk.EventBeforeCompact) {
		t.Fatal("audit handles only notifications")
	}
	ctx := context.Background()
	if err := h.Dispatcher.Compact(ctx, &sdk.CompactEvent{SessionID: "s1", CompactionEntry: json.RawMessage(compactionEntry)}); err != nil {
		t.Fatal(err)
	}
	if err := h.Dispatcher.Tree(ctx, &sdk.TreeEvent{SessionID: "s1", NewLeafID: "a3", OldLeafID: "a9", SummaryEntry: json.RawMessage(branchEntry), FromExtension: true}); err != nil {
		t.Fatal(err)
	}
	// The Dispatcher's notifications have returned, and the plugin syncs
	// before answering: both lines are on disk now.
	lines := readLines(t, path)
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2: %v", len(lines), lines)
	}
	if lines[0]["event"] != "session_compact" || lines[0]["summaryChars"] != float64(29) || lines[0]["summary"] != nil {
		t.Errorf("compaction line: %v", lines[0])
	}
	if lines[1]["event"] != "session_tree" || lines[1]["entryId"] != "b5" || lines[1]["fromExtension"] != true {
		t.Errorf("tree line: %v", lines[1])
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("audit file mode: %v, %v; want 0600", info.Mode(), err)
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no file", nil, 2, "--file is required"},
		{"unwritable file", []string{"--file", filepath.Join(t.TempDir(), "missing", "audit.jsonl")}, 1, "open audit file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command(binary, tc.args...).CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != tc.code {
				t.Fatalf("exit: %v, want status %d", err, tc.code)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("output %q does not contain %q", out, tc.want)
			}
		})
	}
}
