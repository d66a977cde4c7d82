package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/tidwall/gjson"
)

// TestLastRunKeepsCancelledTimeline: with the guard test plugin running
// as a subprocess, a compaction it cancels writes nothing, yet the daemon
// remembers the run's hook timeline with the guard's reason; a compaction
// it lets through (another session) is remembered with its entry.
func TestLastRunKeepsCancelledTimeline(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "guard")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/pith-dev/pith/internal/testplugins/guard").CombinedOutput(); err != nil {
		t.Fatalf("build guard: %v\n%s", err, out)
	}
	h := startServerWith(t, testConfig(t.TempDir()), []pluginhost.Spec{{Name: "guard", Path: bin, Priority: 1, Timeout: config.DefaultPluginTimeout, Failure: hooks.FailureOpen}})
	srv, c := h.srv, h.client
	ctx := context.Background()
	s, err := c.Create(ctx, "g/s.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for i := range 6 {
		es, err := s.AppendMessages(ctx, userMsg(fmt.Sprintf("u%d", i), 150), assistantMsg(fmt.Sprintf("a%d", i), 150))
		if err != nil {
			t.Fatal(err)
		}
		last = gjson.GetBytes(es[len(es)-1], "id").Str
	}
	label := fmt.Sprintf(`{"type":"label","targetId":%q,"label":"no-compact"}`, last)
	if _, err := s.AppendEntries(ctx, json.RawMessage(label)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Compact(ctx, "", nil); err == nil {
		t.Fatal("the guard did not cancel")
	}
	run, ok := srv.LastRun(s.ID)
	if !ok || !run.Cancelled || run.Plugin != "guard" || run.EntryID != "" || run.Reason != "manual" || len(run.Timeline) != 1 {
		t.Fatalf("last run after the cancel: %+v (%v)", run, ok)
	}
	if st := run.Timeline[0]; st.Plugin != "guard" || st.Event != hooks.EventBeforeCompact || st.Result != hooks.ResultCancel || !strings.Contains(st.Reason, "no-compact") {
		t.Fatalf("step %+v", st)
	}

	s2, err := c.Create(ctx, "g/t.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if _, err := s2.AppendMessages(ctx, userMsg(fmt.Sprintf("u%d", i), 150), assistantMsg(fmt.Sprintf("a%d", i), 150)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s2.Compact(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	run, _ = srv.LastRun(s2.ID)
	if run.Cancelled || run.EntryID != res.EntryID || len(run.Timeline) < 2 {
		t.Fatalf("last run after the saved compaction: %+v", run)
	}
	if got := run.Timeline[1]; got.Event != hooks.EventCompacting || got.Result != "1 context lines" {
		t.Errorf("compacting step %+v", got)
	}
}
