package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/sessiongen"
	"github.com/pith-dev/pith/store/files"
)

// pruneSettings: threshold 90 000 tokens, the default pruning rules.
func pruneSettings() Settings {
	st := testSettings()
	st.ContextWindow, st.ReserveTokens, st.KeepRecentTokens = 100000, 10000, 2000
	st.Pruning = Pruning{Enabled: true, PruneSettings: compaction.DefaultPruneSettings()}
	return st
}

func toolCallMsg(id, tool string, input int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"role":"assistant","content":[{"type":"toolCall","id":%q,"name":%q,"arguments":{"command":"make test"}}],`+
		`"provider":"test","model":"m1","usage":{"input":%d,"output":20,"cacheRead":0,"cacheWrite":0,"totalTokens":%d},"stopReason":"toolUse"}`,
		id, tool, input, input+20))
}

func toolResultMsg(id, tool string, chars int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"role":"toolResult","toolCallId":%q,"toolName":%q,"content":[{"type":"text","text":%s}],"isError":false}`,
		id, tool, jsonString(strings.Repeat("ok  ", chars/4))))
}

// toolHeavySession writes a user request followed by n tool calls whose
// results are ~5 000 tokens each (the tools cycle through tools), all with
// small usages, so that only the last turn's usage decides.
func toolHeavySession(t testing.TB, n int, tools ...string) (*files.Session, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	st, err := files.Create(path, "/repo", files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	msgs := []json.RawMessage{userMsg("run the tests until they pass")}
	for i := range n {
		id, tool := fmt.Sprintf("call%d", i), tools[i%len(tools)]
		msgs = append(msgs, toolCallMsg(id, tool, 1000), toolResultMsg(id, tool, 20000))
	}
	for _, m := range msgs {
		if _, err := st.Append(session.Draft{Type: session.TypeMessage, Fields: json.RawMessage(`{"message":` + string(m) + `}`)}); err != nil {
			t.Fatal(err)
		}
	}
	return st, path
}

// TestAfterTurnPrunesBeforeTheThreshold: a turn that leaves ~95 000
// tokens (threshold 90 000) in a session of 20 tool outputs of 5 000
// tokens is pruned to below the threshold, so the compaction that would
// have fired does not; the originals are restorable byte for byte.
func TestAfterTurnPrunesBeforeTheThreshold(t *testing.T) {
	store, path := toolHeavySession(t, 20, "bash")
	original := readFile(t, path)
	sum := newScript()
	s := New(store, Options{Settings: pruneSettings(), Summarizer: sum})
	rec := record(s)

	out, err := s.AfterTurn(context.Background(), assistantMsg("All tests pass.", 95000, 50))
	if err != nil {
		t.Fatal(err)
	}
	if out.Pruned == nil {
		t.Fatalf("nothing pruned; events %v", rec.kinds())
	}
	if out.Compaction != nil || sum.count() != 0 {
		t.Fatalf("compaction ran after pruning: %+v, %d summarizer calls", out.Compaction, sum.count())
	}
	// 8 of 20 outputs are protected (40 000 tokens); 12 are pruned.
	if out.Pruned.Pruned != 12 || out.Pruned.TokensAfter >= pruneSettings().threshold() {
		t.Fatalf("pruned %+v", out.Pruned)
	}
	if got := s.ContextTokens(); got != out.Pruned.TokensAfter {
		t.Fatalf("ContextTokens %d, pruning said %d", got, out.Pruned.TokensAfter)
	}
	ev, ok := rec.last(EventPruned)
	if !ok || ev.Pruned != 12 || ev.TokensBefore-ev.TokensAfter != out.Pruned.Saving {
		t.Fatalf("pruned event %+v (ok %v)", ev, ok)
	}
	for _, k := range rec.kinds() {
		if k == EventCompactionStart {
			t.Fatal("a compaction started")
		}
	}
	if n := bytes.Count(readFile(t, path), []byte(`"prunedAt"`)); n != 12 {
		t.Fatalf("%d entries stamped prunedAt, want 12", n)
	}
	// The live context is the pruned one.
	notices := 0
	for _, m := range s.Messages() {
		if bytes.Contains(m.Raw, []byte("[Output truncated - ")) {
			notices++
		}
	}
	if notices != 12 {
		t.Fatalf("%d notices in the live context, want 12", notices)
	}

	// Nothing is lost: restoring gives the original bytes (plus the turn).
	res, err := compaction.Restore(store)
	if err != nil || res.Restored != 12 {
		t.Fatalf("restore: %+v, %v", res, err)
	}
	if got := readFile(t, path); !bytes.HasPrefix(got, original) {
		t.Fatal("restored file does not start with the original bytes")
	}
}

// TestAfterTurnPruningOff: with pruning.enabled false (also when it is
// switched off by a reload) the same turn compacts.
func TestAfterTurnPruningOff(t *testing.T) {
	store, path := toolHeavySession(t, 20, "bash")
	sum := newScript()
	s := New(store, Options{Settings: pruneSettings(), Summarizer: sum})
	off := pruneSettings()
	off.Pruning.Enabled = false
	s.SetSettings(off)
	out, err := s.AfterTurn(context.Background(), assistantMsg("All tests pass.", 95000, 50))
	if err != nil {
		t.Fatal(err)
	}
	if out.Pruned != nil || out.Compaction == nil {
		t.Fatalf("pruned %+v, compaction %+v", out.Pruned, out.Compaction)
	}
	if bytes.Contains(readFile(t, path), []byte(`"prunedAt"`)) {
		t.Fatal("pruned with pruning off")
	}
}

// TestAfterTurnPruningProtectedTools: results of protected tools are never
// pruned, so nothing is saved and the compaction runs.
func TestAfterTurnPruningProtectedTools(t *testing.T) {
	store, path := toolHeavySession(t, 20, "read", "skill")
	s := New(store, Options{Settings: pruneSettings(), Summarizer: newScript()})
	out, err := s.AfterTurn(context.Background(), assistantMsg("Read everything.", 95000, 50))
	if err != nil {
		t.Fatal(err)
	}
	if out.Pruned != nil || out.Compaction == nil {
		t.Fatalf("pruned %+v, compaction %+v", out.Pruned, out.Compaction)
	}
	if bytes.Contains(readFile(t, path), []byte(`"prunedAt"`)) {
		t.Fatal("a protected tool's output was pruned")
	}
}

// TestAfterTurnPruningSettingsApply: protectTokens and minimumSavings are
// the ones of the snapshot in force.
func TestAfterTurnPruningSettingsApply(t *testing.T) {
	store, _ := toolHeavySession(t, 20, "bash")
	st := pruneSettings()
	st.Enabled = false
	st.Pruning.Protect = 90100 // 18 outputs protected: 2 × 5 000 saved
	st.Pruning.Minimum = 15000 // not enough
	s := New(store, Options{Summarizer: offline(), Settings: st})
	out, err := s.AfterTurn(context.Background(), assistantMsg("ok", 95000, 50))
	if err != nil || out.Pruned != nil {
		t.Fatalf("pruned %+v, %v", out.Pruned, err)
	}
	st.Pruning.Minimum = 5000
	s.SetSettings(st)
	if _, err := s.AppendMessages(context.Background(), toolResultMsg("x", "bash", 40)); err != nil {
		t.Fatal(err)
	}
	out, err = s.AfterTurn(context.Background(), assistantMsg("ok", 95000, 50))
	if err != nil || out.Pruned == nil || out.Pruned.Pruned != 2 {
		t.Fatalf("pruned %+v, %v", out.Pruned, err)
	}
}

// BenchmarkAfterTurnPrunePlan is the per-turn cost of automatic pruning
// when a tool result arrived since the last plan, on a 100 000-entry
// session already pruned once: the path walk and plan, no rewrite.
func BenchmarkAfterTurnPrunePlan(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	if err := sessiongen.GenerateFile(path, sessiongen.Benchmark(1, 100000)); err != nil {
		b.Fatal(err)
	}
	store, err := files.Open(path, files.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	st := DefaultSettings()
	st.ContextWindow = 1 << 30
	s := New(store, Options{Summarizer: offline(), Settings: st})
	ctx := context.Background()
	if _, err := s.Prune(ctx, st.Pruning.PruneSettings); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s.mu.Lock()
		s.live.newTools = true
		s.mu.Unlock()
		if r := s.autoPrune(st); r != nil {
			b.Fatal("pruned again")
		}
	}
}

// TestAfterTurnPrunesThinking: pruning.thinking keeps the thinking of the
// newest assistant messages only; the live context loses the older
// thinking at the turn end.
func TestAfterTurnPrunesThinking(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	store, err := files.Create(path, "/repo", files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	st := testSettings()
	st.ContextWindow = 1 << 30
	st.Pruning = Pruning{Enabled: true, PruneSettings: compaction.PruneSettings{Protect: 40000, Minimum: 1000, Thinking: 1}}
	s := New(store, Options{Summarizer: offline(), Settings: st})
	ctx := context.Background()
	thinking := func(i int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"role":"assistant","content":[{"type":"thinking","thinking":%s},{"type":"text","text":"step %d"}],`+
			`"provider":"p","model":"m","usage":{"input":%d,"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":%d},"stopReason":"stop"}`,
			jsonString(strings.Repeat("hmm ", 1000)), i, 1000*i, 1000*i+10))
	}
	var out *Outcome
	for i := 1; i <= 3; i++ {
		if _, err := s.AppendMessages(ctx, userMsg(fmt.Sprintf("go on %d", i))); err != nil {
			t.Fatal(err)
		}
		if out, err = s.AfterTurn(ctx, thinking(i)); err != nil {
			t.Fatal(err)
		}
	}
	if out.Pruned == nil {
		t.Fatal("no thinking pruned")
	}
	withThinking := 0
	for _, m := range s.Messages() {
		if bytes.Contains(m.Raw, []byte(`"type":"thinking"`)) {
			withThinking++
		}
	}
	if withThinking != 1 {
		t.Fatalf("%d live messages keep their thinking, want 1", withThinking)
	}
}
