package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pith-dev/pith/sdk"
	"github.com/pith-dev/pith/sdk/sdktest"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "instructions-keeper-test-")
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

func TestParseInstructions(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want []string
	}{
		{name: "empty", in: "\n\n  \n", max: 100, want: nil},
		{
			name: "headings, bullets and prose",
			in:   "# Project rules\n\nUse Go 1.26.\n\n* run `make test` before committing\n+ never edit vendor/\n1. first\n2) second\n",
			max:  100,
			want: []string{"# Project rules", "Use Go 1.26.", "- run `make test` before committing", "- never edit vendor/", "- first", "- second"},
		},
		{
			name: "wrapped bullet joined",
			in:   "- keep errors on\n  one line\n  please\nNext paragraph\n",
			max:  100,
			want: []string{"- keep errors on one line please", "Next paragraph"},
		},
		{
			name: "fences, rules and comments dropped",
			in:   "<!-- generated\nby a tool -->\nA\n```sh\nmake test\n```\n---\n<!-- one line -->\nB\r\n",
			max:  100,
			want: []string{"A", "make test", "B"},
		},
		{
			name: "clipped by characters",
			in:   "- ééééééééééééééééééééééééé\n",
			max:  10,
			want: []string{"- ééééééé…"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseInstructions(tc.in, tc.max); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func header(cwd string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "session", "version": 3, "id": "s1", "timestamp": "2026-11-30T09:00:00Z", "cwd": cwd})
	return b
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// options are the flag values of a keeper under test.
type options struct {
	files    []string
	dir      string
	maxLines int
}

func TestCompacting(t *testing.T) {
	project := t.TempDir()
	write(t, filepath.Join(project, "AGENTS.md"), "# Rules\n- run make test\n- never push to main\n")
	write(t, filepath.Join(project, "CLAUDE.md"), "Answer in English.\n")
	linked := t.TempDir()
	write(t, filepath.Join(linked, "AGENTS.md"), "- one rule\n")
	if err := os.Symlink("AGENTS.md", filepath.Join(linked, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	extra := filepath.Join(t.TempDir(), "rules.txt")
	write(t, extra, "Be brief.\n\nCite paths.\n")

	tests := []struct {
		name      string
		k         options
		workspace string
		want      []string
	}{
		{
			name:      "the workspace the host names",
			workspace: project,
			want: []string{
				"Standing project instructions from AGENTS.md and CLAUDE.md in " + project + " (still in force after this compaction; keep them in the summary):",
				"AGENTS.md:", "# Rules", "- run make test", "- never push to main",
				"CLAUDE.md:", "Answer in English.",
			},
		},
		{
			name:      "--dir wins over the workspace",
			k:         options{dir: linked},
			workspace: project,
			want: []string{
				"Standing project instructions from AGENTS.md in " + linked + " (still in force after this compaction; keep them in the summary):",
				"- one rule",
			},
		},
		{
			name: "--file",
			k:    options{files: []string{extra, filepath.Join(empty, "missing.md")}},
			want: []string{
				"Standing project instructions from " + extra + " (still in force after this compaction; keep them in the summary):",
				"Be brief.", "Cite paths.",
			},
		},
		{
			name: "line budget",
			k:    options{dir: project, maxLines: 2},
			want: []string{
				"Standing project instructions from AGENTS.md and CLAUDE.md in " + project + " (still in force after this compaction; keep them in the summary):",
				"AGENTS.md:", "# Rules", "- run make test",
				"(2 more instruction lines omitted; read AGENTS.md and CLAUDE.md for all of them)",
			},
		},
		{name: "no instruction files", k: options{dir: empty}},
		{name: "no workspace named"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := &keeper{files: tc.k.files, dir: tc.k.dir, maxLines: tc.k.maxLines, maxChars: 300}
			if k.maxLines == 0 {
				k.maxLines = 60
			}
			h := sdktest.InProcess(t, k)
			res, err := h.Compacting(context.Background(), &sdk.CompactingEvent{SessionID: "s1", Reason: sdk.ReasonManual, Workspace: tc.workspace})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			if res != nil {
				got = res.Context
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("context\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestHeaderCwdNeverRead: the session header's cwd is a daemon client's
// choice; the plugin keeps instructions only from the workspace the host
// names (which pith serve confines to server.workspaceRoot). Before, it
// read the header through the host API and opened <cwd>/AGENTS.md, so a
// tenant naming another's directory — or an operator's home — got those
// files back in its context.
func TestHeaderCwdNeverRead(t *testing.T) {
	project := t.TempDir()
	write(t, filepath.Join(project, "AGENTS.md"), "- secret rule\n")
	fake := &sdktest.FakeHost{Sessions: map[string][]json.RawMessage{"s1": {header(project)}}}
	h := sdktest.InProcess(t, &keeper{maxLines: 10, maxChars: 100}, sdktest.WithHost(fake))
	if res, err := h.Compacting(context.Background(), &sdk.CompactingEvent{SessionID: "s1"}); err != nil || res != nil {
		t.Fatalf("no workspace named: got %+v, %v; want nothing", res, err)
	}
	if calls := fake.Calls(); len(calls) != 0 {
		t.Fatalf("host calls %v, want none", calls)
	}
}

// TestLinkOutOfTheWorkspace: an AGENTS.md in the workspace that is a link
// to a file outside it is not read (CLAUDE.md linking to AGENTS.md, inside,
// still is).
func TestLinkOutOfTheWorkspace(t *testing.T) {
	project, outside := t.TempDir(), t.TempDir()
	write(t, filepath.Join(outside, "secret.md"), "- not the project's\n")
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(project, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(project, "CLAUDE.md"), "- the project's own\n")
	h := sdktest.InProcess(t, &keeper{maxLines: 10, maxChars: 100})
	res, err := h.Compacting(context.Background(), &sdk.CompactingEvent{SessionID: "s1", Workspace: project})
	if err != nil || res == nil {
		t.Fatalf("got %+v, %v", res, err)
	}
	got := strings.Join(res.Context, "\n")
	if strings.Contains(got, "not the project's") || !strings.Contains(got, "the project's own") {
		t.Fatalf("context %q", got)
	}
}

// TestDeniedInstructionFiles: in a workspace that is a home directory, an
// AGENTS.md linking to the SSH key is not read, nor a CLAUDE.md holding a
// private key; an ordinary one is.
func TestDeniedInstructionFiles(t *testing.T) {
	for _, claude := range []string{"-----BEGIN OPENSSH PRIVATE KEY-----\nS3CR3T-IN-CLAUDE\n", "- the project's own\n"} {
		home := t.TempDir()
		if err := os.Mkdir(filepath.Join(home, ".ssh"), 0o700); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(home, ".ssh", "id_ed25519"), "- S3CR3T-KEY\n")
		if err := os.Symlink(".ssh/id_ed25519", filepath.Join(home, "AGENTS.md")); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(home, "CLAUDE.md"), claude)
		h := sdktest.InProcess(t, &keeper{maxLines: 10, maxChars: 100})
		res, err := h.Compacting(context.Background(), &sdk.CompactingEvent{SessionID: "s1", Workspace: home})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if res != nil {
			got = strings.Join(res.Context, "\n")
			for _, m := range res.Messages {
				got += m.Content
			}
		}
		if strings.Contains(got, "S3CR3T") || strings.Contains(claude, "own") != strings.Contains(got, "the project's own") {
			t.Errorf("CLAUDE.md %q: context %q", claude, got)
		}
	}
}

// TestSubprocess gets the workspace over the real gRPC connection and
// checks the lines arrive through the Dispatcher.
func TestSubprocess(t *testing.T) {
	project := t.TempDir()
	write(t, filepath.Join(project, "AGENTS.md"), "- "+strings.Repeat("long ", 20)+"\n- short\n")
	fake := &sdktest.FakeHost{}
	h := sdktest.Subprocess(t, binary, sdktest.WithHost(fake), sdktest.WithArgs("--max-chars", "30"))
	if !h.Plugin.Implements(sdk.EventCompacting) || h.Plugin.Implements(sdk.EventBeforeCompact) {
		t.Fatal("instructions-keeper must handle exactly session.compacting")
	}
	out, err := h.Dispatcher.Compacting(context.Background(), &sdk.CompactingEvent{SessionID: "s9", Reason: sdk.ReasonThreshold, Workspace: project})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Standing project instructions from AGENTS.md in " + project + " (still in force after this compaction; keep them in the summary):",
		"- long long long long long lo…",
		"- short",
	}
	if !reflect.DeepEqual(out.Context, want) {
		t.Fatalf("context\n got %q\nwant %q", out.Context, want)
	}
	// The same instructions, verbatim, as the message put after the
	// compaction, namespaced by the plugin's name.
	if len(out.Messages) != 1 || out.Messages[0].CustomType() != h.Plugin.Info().Name+"/instructions" ||
		!strings.HasSuffix(out.Messages[0].Content, "\n\n- long long long long long lo…\n- short") {
		t.Fatalf("messages %+v", out.Messages)
	}
	h2 := sdktest.Subprocess(t, binary, sdktest.WithHost(fake), sdktest.WithArgs("--no-inject"))
	if out, err := h2.Dispatcher.Compacting(context.Background(), &sdk.CompactingEvent{SessionID: "s9", Workspace: project}); err != nil || len(out.Messages) != 0 || len(out.Context) == 0 {
		t.Fatalf("--no-inject: %+v, %v", out, err)
	}
}

// TestWorkspaceSwappedForALink: the host names the workspace by its real
// path; if the directory there has since been swapped for a link (to
// another tenant's workspace, say), the plugin reads nothing rather than
// what the link leads to. A --dir may be a link: the operator named it.
func TestWorkspaceSwappedForALink(t *testing.T) {
	base := t.TempDir()
	other := filepath.Join(base, "team-b")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(other, "AGENTS.md"), "- team-b's rule\n")
	swapped := filepath.Join(base, "team-a")
	if err := os.Symlink(other, swapped); err != nil {
		t.Fatal(err)
	}
	h := sdktest.InProcess(t, &keeper{maxLines: 10, maxChars: 100})
	if res, err := h.Compacting(context.Background(), &sdk.CompactingEvent{SessionID: "s1", Workspace: swapped}); err != nil || res != nil {
		t.Fatalf("workspace swapped for a link: got %+v, %v; want nothing", res, err)
	}
	h2 := sdktest.InProcess(t, &keeper{dir: swapped, maxLines: 10, maxChars: 100})
	if res, err := h2.Compacting(context.Background(), &sdk.CompactingEvent{SessionID: "s1"}); err != nil || res == nil {
		t.Fatalf("--dir through a link: got %+v, %v; want its instructions", res, err)
	}
}
