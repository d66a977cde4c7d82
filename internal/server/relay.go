package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/explore"
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/served"
)

// eventRelay carries engine events between the hosts sharing a store
// (sessions.store): this host's are published through the store, and the
// events other hosts published are delivered to this host's watchers
// (WatchEvents); one the store refuses while it is down is sent again
// once it is back (publishLoop). The sessions themselves are the store
// source's (served.Stored), which hands the published payloads on here.
type eventRelay struct {
	st     store.Store
	holder string
	log    hclog.Logger
	// deliver hands an event another host published to the watchers of
	// the session open here under key, if any.
	deliver func(key any, ev engine.Event)

	// outbox queues this host's engine events for publication, so a slow
	// or unreachable database never holds up an engine.
	outbox chan published
	stop   context.CancelFunc
	done   sync.WaitGroup

	// lost names the sessions whose events the outbox dropped, told to
	// the other hosts once the store takes events again.
	// Each is the number of the first event dropped (published counts
	// them): the marker follows the events queued before it.
	lostMu    sync.Mutex
	lost      map[string]uint64
	published atomic.Uint64
	// unsent counts the sends the store refused (a test waits for one).
	unsent atomic.Int64
}

// published is one engine event on its way to the other hosts, and its
// number in the order this host published them.
type published struct {
	name string
	ev   engine.Event
	n    uint64
}

// outboxSize is how many events may wait for the database; past it they
// are dropped (and logged), and once the database takes events again the
// other hosts are told the session's events were lost (eventsLost): their
// watchers' streams end, as a watcher's that fell behind, so their
// clients watch again and read the session. This host's watchers still
// get every event.
var outboxSize = 1024 // a variable for a test's small outbox

// eventsLost is the kind of the marker a host publishes for a session
// whose events it could not keep for the other hosts; it is never
// delivered as an event.
const eventsLost engine.EventKind = "pith.events_lost"

// publishRetry is the first wait before an event the store refused as
// unavailable is sent again; the wait doubles up to publishRetryMax. The
// events behind it wait, in order: they reach the other hosts when the
// database is back.
const (
	publishRetry    = 100 * time.Millisecond
	publishRetryMax = 2 * time.Second
)

func newEventRelay(st store.Store, holder string, log hclog.Logger, deliver func(key any, ev engine.Event)) *eventRelay {
	ctx, cancel := context.WithCancel(context.Background())
	r := &eventRelay{
		st: st, holder: holder, log: log, deliver: deliver,
		outbox: make(chan published, outboxSize),
		stop:   cancel,
	}
	r.done.Add(1)
	go r.publishLoop(ctx)
	return r
}

// received is an event some host published for the session name, as the
// store's watch reports it.
func (r *eventRelay) received(name string, payload []byte) {
	var w wireEvent
	if json.Unmarshal(payload, &w) != nil || w.Host == r.holder {
		return // this host's own: its watchers had it already
	}
	if engine.EventKind(w.Kind) == eventsLost {
		r.lostElsewhere(served.StoredKey(name))
		return
	}
	r.deliver(served.StoredKey(name), w.event())
}

// publish tells the other hosts sharing the store about an event of the
// session rel's engine, without blocking. With the files it does
// nothing: every writer of them that emits engine events is this process.
func (s *Server) publish(rel string, ev engine.Event) {
	if s.relay != nil {
		s.relay.publish(rel, ev)
	}
}

// closeSource stops the relay (what waits is sent, briefly), then closes
// the session source.
func (s *Server) closeSource() error {
	if s.relay != nil {
		s.relay.close()
	}
	return s.src.Close()
}

// publish queues an engine event of the session for the other hosts.
func (r *eventRelay) publish(rel string, ev engine.Event) {
	n := r.published.Add(1)
	select {
	case r.outbox <- published{rel, ev, n}:
	default:
		r.log.Warn("too many engine events waiting for the session store; one is not sent to the other hosts, which are told so once the store is back", "session", rel, "kind", ev.Kind)
		r.lostMu.Lock()
		if _, ok := r.lost[rel]; !ok {
			if r.lost == nil {
				r.lost = map[string]uint64{}
			}
			r.lost[rel] = n
		}
		r.lostMu.Unlock()
	}
}

// publishLoop sends the queued events in order. One the store refuses as
// unavailable is sent again, after a wait that doubles, until it goes
// through or the source closes: an event published while the database
// is down reaches the other hosts when it is back, not only this one.
func (r *eventRelay) publishLoop(ctx context.Context) {
	defer r.done.Done()
	send := func(ctx context.Context, name string, w wireEvent) error {
		payload, err := w.encode()
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = r.st.Publish(pctx, name, payload)
			cancel()
		}
		return err
	}
	// deliver sends p, retrying while the store is unavailable; false
	// when ctx ended first (p is then still to send).
	deliver := func(ctx context.Context, p published) bool {
		warned := false
		for wait := publishRetry; ; wait = min(2*wait, publishRetryMax) {
			err := send(ctx, p.name, wireOf(r.holder, p.ev))
			if err == nil {
				r.tellLost(ctx, p.n, send)
				return true
			}
			if ctx.Err() != nil {
				return false
			}
			r.unsent.Add(1)
			if !errors.Is(err, store.ErrUnavailable) {
				r.log.Warn("an engine event did not reach the other hosts", "session", p.name, "kind", p.ev.Kind, "error", err)
				return true
			}
			if !warned {
				r.log.Warn("the session store is unavailable; engine events wait for it to reach the other hosts", "session", p.name, "kind", p.ev.Kind, "error", err)
				warned = true
			}
			select {
			case <-ctx.Done():
				return false
			case <-time.After(wait):
			}
		}
	}
	// drain sends, briefly, what is left at shutdown (a compaction that
	// ended as its session closed), starting with pending.
	drain := func(pending *published) {
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if pending != nil && send(dctx, pending.name, wireOf(r.holder, pending.ev)) != nil {
			return
		}
		for {
			select {
			case p := <-r.outbox:
				if send(dctx, p.name, wireOf(r.holder, p.ev)) != nil {
					return
				}
			default:
				return
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			drain(nil)
			return
		case p := <-r.outbox:
			if !deliver(ctx, p) {
				drain(&p)
				return
			}
		}
	}
}

// tellLost publishes, once the store takes events again, the marker of
// each session whose events the outbox dropped: after the events queued
// before the first one dropped (sent is the number of the one just sent),
// or once nothing waits.
func (r *eventRelay) tellLost(ctx context.Context, sent uint64, send func(context.Context, string, wireEvent) error) {
	r.lostMu.Lock()
	if len(r.lost) == 0 {
		r.lostMu.Unlock()
		return
	}
	idle := len(r.outbox) == 0
	var due []string
	for name, first := range r.lost {
		if idle || sent > first {
			due = append(due, name)
			delete(r.lost, name)
		}
	}
	r.lostMu.Unlock()
	for _, name := range due {
		if err := send(ctx, name, wireEvent{Host: r.holder, Kind: string(eventsLost), Time: time.Now().UnixNano()}); err != nil {
			// Told after the next event that goes through.
			r.lostMu.Lock()
			if _, ok := r.lost[name]; !ok {
				r.lost[name] = 0
			}
			r.lostMu.Unlock()
		}
	}
}

// lostElsewhere ends the streams of this host's watchers of the session
// under key as streams that fell behind: another host lost events of it,
// so they watch again and read the session.
func (r *eventRelay) lostElsewhere(key any) {
	r.deliver(key, engine.Event{Kind: eventsLost, Time: time.Now()})
}

// close stops the relay once what waits was sent, briefly (drain).
func (r *eventRelay) close() {
	r.stop()
	r.done.Wait()
}

// wireEvent is an engine event as published to the other hosts: the
// fields a WatchEvents client gets, small enough for the store's payload
// limit (free text is cut).
type wireEvent struct {
	Host         string `json:"host"`
	Kind         string `json:"kind"`
	Time         int64  `json:"time"`
	Reason       string `json:"reason,omitempty"`
	Aborted      bool   `json:"aborted,omitempty"`
	Cancelled    bool   `json:"cancelled,omitempty"`
	WillRetry    bool   `json:"willRetry,omitempty"`
	Continue     string `json:"continue,omitempty"`
	Error        string `json:"error,omitempty"`
	Plugin       string `json:"plugin,omitempty"`
	TokensBefore int    `json:"tokensBefore,omitempty"`
	TokensAfter  int    `json:"tokensAfter,omitempty"`
	EntryID      string `json:"entryId,omitempty"`
	// Progress is a compaction_progress event's worker turn.
	Progress *explore.Progress `json:"progress,omitempty"`
}

// maxWireText bounds each free-text field at first; encode cuts further
// when escaping made the payload too large for the store.
const maxWireText = 1024

// cut shortens s to at most n bytes, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func wireOf(host string, ev engine.Event) wireEvent {
	return wireEvent{
		Host: host, Kind: string(ev.Kind), Time: ev.Time.UnixNano(), Reason: string(ev.Reason),
		Aborted: ev.Aborted, Cancelled: ev.Cancelled, WillRetry: ev.WillRetry, Continue: ev.Continue,
		Error: ev.Error, Plugin: ev.Plugin, TokensBefore: ev.TokensBefore, TokensAfter: ev.TokensAfter, EntryID: ev.EntryID,
		Progress: wireProgress(ev.Progress),
	}
}

// maxWireTools bounds the tool names of a relayed worker turn: a model
// may call any number of tools in one turn, and the event must stay
// within the store's payload limit.
const (
	maxWireTools = 32
	maxWireTool  = 64 // bytes of one name: worker tools have short names
)

// wireProgress is p with at most maxWireTools tool names, each cut to
// maxWireTool bytes (the last name says how many were left out).
func wireProgress(p *explore.Progress) *explore.Progress {
	if p == nil {
		return nil
	}
	out := *p
	out.Tools = nil
	for i, t := range p.Tools {
		if i == maxWireTools {
			out.Tools = append(out.Tools, fmt.Sprintf("… %d more", len(p.Tools)-i))
			break
		}
		out.Tools = append(out.Tools, cut(t, maxWireTool))
	}
	return &out
}

// encode is the event's JSON within store.MaxPayload: the free text is
// cut shorter until it fits (a character may take six bytes escaped).
func (w wireEvent) encode() ([]byte, error) {
	for n := maxWireText; ; n /= 2 {
		w.Continue, w.Error, w.Plugin, w.EntryID = cut(w.Continue, n), cut(w.Error, n), cut(w.Plugin, n), cut(w.EntryID, n)
		b, err := json.Marshal(w)
		if err != nil || len(b) <= store.MaxPayload || n == 0 {
			return b, err
		}
	}
}

func (w wireEvent) event() engine.Event {
	return engine.Event{
		Kind: engine.EventKind(w.Kind), Time: time.Unix(0, w.Time), Reason: engine.Reason(w.Reason),
		Aborted: w.Aborted, Cancelled: w.Cancelled, WillRetry: w.WillRetry, Continue: w.Continue,
		Error: w.Error, Plugin: w.Plugin, TokensBefore: w.TokensBefore, TokensAfter: w.TokensAfter, EntryID: w.EntryID,
		Progress: w.Progress,
	}
}
