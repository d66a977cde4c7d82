package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
)

// TestInjectedMessagesFollowTheCompaction: messages two plugins return from
// session.compacting are custom_message entries right after the compaction,
// in priority order, namespaced by plugin; they are in the live context and
// in the context the file builds (as pi builds it) after the summary.
func TestInjectedMessagesFollowTheCompaction(t *testing.T) {
	keeper := dispatch.NewPlugin(hooks.PluginInfo{Name: "keeper", Priority: 1}, hooks.Funcs{
		OnCompacting: func(ctx context.Context, ev *hooks.CompactingEvent) (*hooks.CompactingResult, error) {
			return &hooks.CompactingResult{Messages: []hooks.InjectedMessage{{Type: "rules", Content: "Always run make test."}}}, nil
		},
	})
	decisions := dispatch.NewPlugin(hooks.PluginInfo{Name: "decisions", Priority: 2}, hooks.Funcs{
		OnCompacting: func(ctx context.Context, ev *hooks.CompactingEvent) (*hooks.CompactingResult, error) {
			return &hooks.CompactingResult{Context: []string{"steer"}, Messages: []hooks.InjectedMessage{{Content: "We chose SQLite over Postgres.", Display: true}}}, nil
		},
	})
	d, err := dispatch.NewDispatcher(dispatch.Options{}, decisions, keeper)
	if err != nil {
		t.Fatal(err)
	}
	store, path := newSession(t, 12)
	s := New(store, Options{Summarizer: offline(), Settings: testSettings(), Hooks: d})
	res, err := s.Compact(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	f, err := session.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	n := len(f.Entries)
	first, second := f.Entries[n-2], f.Entries[n-1]
	if first.ParentID != res.Entry.ID || second.ParentID != first.ID {
		t.Fatalf("the messages do not follow the compaction: %s / %s", first.Raw, second.Raw)
	}
	for _, c := range []struct {
		e                   *session.Entry
		customType, content string
	}{{first, "keeper/rules", "Always run make test."}, {second, "decisions", "We chose SQLite over Postgres."}} {
		if c.e.Type != session.TypeCustomMessage || c.e.Get("customType").Str != c.customType || c.e.Get("content").Str != c.content {
			t.Errorf("entry %s", c.e.Raw)
		}
	}

	built := session.NewTree(f.Entries).BuildContext(session.LeafDefault).Messages
	live := s.Messages()
	for name, msgs := range map[string][]session.Message{"file": built, "live": live} {
		if msgs[0].Role != session.RoleCompactionSummary || msgs[len(msgs)-1].Role != session.RoleCustom ||
			!strings.Contains(string(msgs[len(msgs)-1].Raw), "SQLite") || !strings.Contains(string(msgs[len(msgs)-2].Raw), "make test") {
			t.Errorf("%s context does not end with the injected messages", name)
		}
	}
}

// TestInjectedMessagesBounded: more than MaxInjectedMessages, an empty one,
// or messages over the context byte limit make the plugin's result a
// failure (open: ignored), and the compaction goes on without them.
func TestInjectedMessagesBounded(t *testing.T) {
	for name, msgs := range map[string][]hooks.InjectedMessage{
		"too many": make([]hooks.InjectedMessage, hooks.MaxInjectedMessages+1),
		"empty":    {{Content: "  "}},
		"too big":  {{Content: strings.Repeat("x", dispatch.DefaultLimits().ContextBytes+1)}},
	} {
		for i := range msgs {
			if msgs[i].Content == "" {
				msgs[i].Content = "m"
			}
		}
		if name == "empty" {
			msgs[0].Content = "  "
		}
		p := dispatch.NewPlugin(hooks.PluginInfo{Name: "flood"}, hooks.Funcs{
			OnCompacting: func(ctx context.Context, ev *hooks.CompactingEvent) (*hooks.CompactingResult, error) {
				return &hooks.CompactingResult{Messages: msgs}, nil
			},
		})
		d, err := dispatch.NewDispatcher(dispatch.Options{}, p)
		if err != nil {
			t.Fatal(err)
		}
		store, path := newSession(t, 12)
		s := New(store, Options{Summarizer: offline(), Settings: testSettings(), Hooks: d})
		if _, err := s.Compact(context.Background(), ""); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f, _ := session.Load(path)
		if last := f.Entries[len(f.Entries)-1]; last.Type != session.TypeCompaction {
			t.Errorf("%s: %s after the compaction", name, last.Raw)
		}
	}
}
