package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/pgtest"
	"github.com/pith-dev/pith/store/postgres"
)

// pausingModel is an OpenAI-compatible model on loopback whose first
// armed request is held until release and then answered like any other:
// a summary that arrives after its host was paused.
type pausingModel struct {
	srv     *httptest.Server
	armed   atomic.Bool
	holding chan struct{}
	release chan struct{}
	calls   atomic.Int64
	freed   sync.Once
}

// free lets the held request, and any later, be answered.
func (m *pausingModel) free() { m.freed.Do(func() { close(m.release) }) }

func newPausingModel(t *testing.T) *pausingModel {
	m := &pausingModel{holding: make(chan struct{}), release: make(chan struct{})}
	var once sync.Once
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n := m.calls.Add(1)
		if m.armed.CompareAndSwap(true, false) {
			once.Do(func() { close(m.holding) })
			select {
			case <-m.release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1, "model": gjson.GetBytes(body, "model").String(),
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": fmt.Sprintf("## Goal\nKeep going.\n\n## Progress\nSummary %d.", n)}}},
			"usage": map[string]any{"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940},
		})
	}))
	t.Cleanup(func() { m.free(); m.srv.Close() })
	return m
}

// TestPausedHostLosesItsLease: a `pith serve` host is stopped (SIGSTOP)
// in the middle of a threshold compaction, its summary request pending,
// for longer than the lease. Another host takes the lease over and
// compacts; the paused host's summary then arrives and it is resumed
// (SIGCONT). Its compaction must not be saved (one compaction for that
// trigger), nothing it half-wrote is visible, every acknowledged message
// is there once, and the resumed host serves the session on.
func TestPausedHostLosesItsLease(t *testing.T) {
	url := pgtest.NewDatabase(t)
	model := newPausingModel(t)
	t.Setenv("PITH_TEST_MODEL_KEY", "sk-test-not-a-real-key")
	const lease = 2 * time.Second
	dir := t.TempDir()
	cfgPath := writeMultiHostConfig(t, dir, url, model.srv.URL, lease)
	hosts := []*serveProc{startServe(t, cfgPath), startServe(t, cfgPath)}
	paused := false
	defer func() {
		if paused {
			hosts[0].cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	ctx := context.Background()
	const name = "team/paused.jsonl"
	var sessions []*client.Session
	for _, h := range hosts {
		c, err := client.Dial(h.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := c.Create(ctx, name, "/work")
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, s)
	}

	// Host 0's turns go on until a threshold compaction's summary request
	// is held at the model.
	victim := &turnWriter{name: "victim", s: sessions[0]}
	model.armed.Store(true)
	victimDone := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			if err := victim.turn(ctx, fmt.Sprintf("victim-t%d", i)); err != nil {
				victimDone <- err
				return
			}
			select {
			case <-model.holding:
				victimDone <- nil
				return
			default:
			}
		}
	}()
	select {
	case <-model.holding:
	case err := <-victimDone:
		t.Fatalf("host 0 never started a compaction: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("host 0 never started a compaction")
	}
	if err := hosts[0].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused = true
	stopped := time.Now()

	// Host 1 takes the lease once it expired, and compacts.
	refused := 0
	var taken string
	for {
		res, err := sessions[1].Compact(ctx, "", nil)
		if err == nil {
			taken = res.EntryID
			break
		}
		if !errors.Is(err, client.ErrAborted) {
			t.Fatalf("compaction on host 1 while host 0 is paused: %v", err)
		}
		refused++
		if time.Since(stopped) > time.Minute {
			t.Fatal("host 1 never took over the paused host's lease")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if refused == 0 {
		t.Error("host 1 compacted at once: the paused host held no lease")
	}
	// The paused host's summary is answered, then it runs again.
	model.free()
	if err := hosts[0].cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	paused = false
	var turnErr error
	select {
	case turnErr = <-victimDone:
	case <-time.After(2 * time.Minute):
		t.Fatal("the paused host's turn never ended")
	}
	t.Logf("host 1 took over after %v (TTL %v, %d refused); the paused host's turn: err %v, compactions %v, failures %q",
		time.Since(stopped).Round(100*time.Millisecond), lease, refused, turnErr, victim.compactions, victim.failures)

	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The resumed host serves the session on, seeing host 1's compaction.
	back := &turnWriter{name: "back", s: sessions[0]}
	for i := range 2 {
		if err := back.turn(ctx, fmt.Sprintf("back-t%d", i)); err != nil {
			t.Fatalf("the resumed host: %v", err)
		}
	}
	f, err := st.Load(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, name, f, []*turnWriter{victim, back})
	firstKept := map[string]string{}
	for _, e := range f.Entries {
		if e.Type != session.TypeCompaction {
			continue
		}
		fk := gjson.GetBytes(e.Raw, "firstKeptEntryId").String()
		if other, dup := firstKept[fk]; dup {
			t.Errorf("compactions %s and %s both keep from %s: the paused host's late compaction was saved", other, e.ID, fk)
		}
		firstKept[fk] = e.ID
	}
	for _, id := range victim.compactions {
		if id != taken {
			t.Errorf("the paused host reported compaction %s, saved under a lease host 1 had taken", id)
		}
	}
	if _, ok := firstKept[gjson.GetBytes(entryRaw(f, taken), "firstKeptEntryId").String()]; !ok {
		t.Errorf("host 1's compaction %s is not in the store", taken)
	}
}

func entryRaw(f *session.File, id string) []byte {
	for _, e := range f.Entries {
		if e.ID == id {
			return e.Raw
		}
	}
	return nil
}
