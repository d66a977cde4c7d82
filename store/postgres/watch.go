package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pith-dev/pith/store"
)

// channel is the NOTIFY channel on which writes wake the watches.
const channel = "pith_sessions"

// eventsKept is how long a published event's row is kept for the
// watches; an older row is not delivered.
const eventsKept = "10 minutes"

// pollInterval is how often a watch looks for changes when nothing woke
// it: how late a change is seen when its NOTIFY was lost. Not a setting:
// a look is two index probes that find nothing when nothing changed, so a
// second costs every host next to nothing, and a shorter wait would not
// change what a host does (it reads what is new before every call anyway;
// the watch only tells it of rewrites and of other hosts' events).
const pollInterval = time.Second

// wakeGap is the least time between two looks that notifications asked
// for: under a stream of writes a watch looks about 1/wakeGap times a
// second, each look taking in every write since the last, instead of once
// per write. It also bounds what a flood of forged notifications costs:
// at most 1/wakeGap looks a second per host, each finding nothing.
const wakeGap = 20 * time.Millisecond

// Watch reports every change any host makes, once, until ctx ends. It
// keeps its own connection, LISTENing for wake-ups, and reconnects when
// that connection is lost; what changed meanwhile is found by the first
// look after it is back. Only when the database itself is not the one the
// watch last saw (restarted, failed over, restored: a committed change
// may have been lost or its transaction id reused) does the watch report
// an EventResync, after which a watcher rereads; the events published on
// that server since it started are then delivered too, also those made
// before the watch reconnected.
func (s *Store) Watch(ctx context.Context) (<-chan store.Event, error) {
	w := &watcher{store: s, out: make(chan store.Event, 64)}
	conn, err := w.connect(ctx)
	if err != nil {
		return nil, err
	}
	go w.run(ctx, conn)
	return w.out, nil
}

// watcher is one Watch: what its previous look saw.
type watcher struct {
	store *Store
	out   chan store.Event
	// The snapshots of the previous look's two queries (pg_snapshot
	// text): a row stamped by a transaction one of them does not see is
	// new.
	sessionsSeen, eventsSeen string
	// started identifies the server process the snapshots came from.
	started time.Time
	// eventsSince, set when the watch found a restarted server, is that
	// server's start: its next look reports every event published since
	// (lookEventsSince), which no snapshot of the old server's covers — a
	// host that kept an event while the database was down publishes it as
	// soon as it is back, often before this watch reconnects.
	eventsSince time.Time
	// lastLook is when the watch last looked.
	lastLook time.Time
}

// connect opens the listening connection and, the first time, takes the
// snapshot from which changes count; on a reconnection it reports whether
// the snapshots kept can still be trusted.
func (w *watcher) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, w.store.listen.Copy())
	if err != nil {
		return nil, classify(err)
	}
	var (
		snap    string
		started time.Time
	)
	// LISTEN first: a change committed after the snapshot is found by a
	// look, and its wake-up is not missed.
	_, err = conn.Exec(ctx, "LISTEN "+channel)
	if err == nil {
		err = conn.QueryRow(ctx, `SELECT pg_current_snapshot()::text, pg_postmaster_start_time()`).Scan(&snap, &started)
	}
	if err != nil {
		conn.Close(context.Background())
		return nil, classify(err)
	}
	if w.sessionsSeen == "" {
		w.sessionsSeen, w.eventsSeen, w.started = snap, snap, started
		return conn, nil
	}
	if !started.Equal(w.started) || snapshotXmin(snap) < snapshotXmin(w.sessionsSeen) || snapshotXmin(snap) < snapshotXmin(w.eventsSeen) {
		// Not the server the snapshots came from: start over from now,
		// and have the watcher reread what it holds; the events this
		// server has kept since it started are all new here.
		w.sessionsSeen, w.eventsSeen, w.started = snap, snap, started
		w.eventsSince = started
		select {
		case w.out <- store.Event{Kind: store.EventResync}:
		case <-ctx.Done():
			conn.Close(context.Background())
			return nil, ctx.Err()
		}
	}
	return conn, nil
}

// snapshotXmin is the xmin of a pg_snapshot's text (xmin:xmax:xip,…).
func snapshotXmin(snap string) uint64 {
	x, _, _ := strings.Cut(snap, ":")
	n, _ := strconv.ParseUint(x, 10, 64)
	return n
}

func (w *watcher) run(ctx context.Context, conn *pgx.Conn) {
	defer close(w.out)
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	backoff := 50 * time.Millisecond
	for {
		if conn == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
			var err error
			if conn, err = w.connect(ctx); err != nil {
				if ctx.Err() == nil {
					w.store.warn.warn("watch", "cannot watch the store for other hosts' changes; retrying", err)
				}
				continue
			}
			backoff = 50 * time.Millisecond
			// What changed while nobody listened, at once.
		} else if err := w.wait(ctx, conn); err != nil {
			if ctx.Err() != nil {
				return
			}
			w.store.warn.warn("watch", "lost the connection watching the store for other hosts' changes; reconnecting (what changes meanwhile is reported then)", classify(err))
			conn.Close(context.Background())
			conn = nil
			continue
		}
		if ctx.Err() != nil {
			return
		}
		events, err := w.look(ctx, conn)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.store.warn.warn("watch", "cannot look for other hosts' changes; reconnecting", classify(err))
			conn.Close(context.Background())
			conn = nil
			continue
		}
		for _, ev := range events {
			select {
			case w.out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}
}

// wait returns when it is time to look: a notification came (then no
// sooner than wakeGap after the last look, and having taken in the
// notifications already received, which this look covers), or
// pollInterval passed without one. An error: the connection failed, or
// ctx ended.
func (w *watcher) wait(ctx context.Context, conn *pgx.Conn) error {
	wctx, cancel := context.WithTimeout(ctx, pollInterval)
	_, err := conn.WaitForNotification(wctx)
	cancel()
	if err != nil {
		// The interval passed: look anyway (the connection is still good
		// unless it says it is closed).
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed() {
			return nil
		}
		return err
	}
	if rest := wakeGap - time.Since(w.lastLook); rest > 0 {
		select {
		case <-time.After(rest):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Drop the wake-ups already read (during the last look's queries):
	// this look covers them. A cancelled context returns the buffered
	// ones and then stops without reading the connection.
	done, stop := context.WithCancel(ctx)
	stop()
	for {
		if _, err := conn.WaitForNotification(done); err != nil {
			return nil
		}
	}
}

// The two queries of a look, sent together (one round trip). Each reads
// the rows stamped by a transaction the previous look's snapshot ($1) did
// not see: xids at or past its xmin (an index range), less those it saw.
// Each returns its own statement's snapshot for the next look, also when
// it finds no row (the LEFT JOIN from one empty row). A transaction still
// running at the look is not seen by the new snapshot either, so it is
// found by the look after it commits, however late that is.
const (
	lookSessions = `SELECT pg_current_snapshot()::text, s.name,
		NOT pg_visible_in_snapshot(s.created_xid, $1::pg_snapshot),
		coalesce(NOT pg_visible_in_snapshot(s.rewritten_xid, $1::pg_snapshot), false)
	FROM (SELECT) AS one
	LEFT JOIN pith_sessions s ON s.changed_xid >= pg_snapshot_xmin($1::pg_snapshot)
		AND NOT pg_visible_in_snapshot(s.changed_xid, $1::pg_snapshot)
	ORDER BY s.name`
	lookEvents = `SELECT pg_current_snapshot()::text, e.session, e.payload
	FROM (SELECT) AS one
	LEFT JOIN pith_events e ON e.xid >= pg_snapshot_xmin($1::pg_snapshot)
		AND NOT pg_visible_in_snapshot(e.xid, $1::pg_snapshot)
		AND e.at >= now() - interval '` + eventsKept + `'
	ORDER BY e.id`
	// lookEventsSince is lookEvents for the first look after a restart
	// of the server: every event made since it started ($1), seen or not
	// by the snapshot of the reconnection (one taken before events that
	// commit later, which the next look finds by their xid).
	lookEventsSince = `SELECT pg_current_snapshot()::text, e.session, e.payload
	FROM (SELECT) AS one
	LEFT JOIN pith_events e ON e.at >= $1::timestamptz
		AND e.at >= now() - interval '` + eventsKept + `'
	ORDER BY e.id`
)

// look returns what changed since the previous look, and moves the
// snapshots on: the sessions' changes first (a rewrite before the event
// that says a compaction ended), then the published events in the order
// their rows were made. A session created since is reported created (a
// host reads it whole), one rewritten since rewritten (also, when both),
// any other change appended (a host reads what is new).
func (w *watcher) look(ctx context.Context, conn *pgx.Conn) ([]store.Event, error) {
	w.lastLook = time.Now()
	b := &pgx.Batch{}
	b.Queue(lookSessions, w.sessionsSeen)
	if w.eventsSince.IsZero() {
		b.Queue(lookEvents, w.eventsSeen)
	} else {
		b.Queue(lookEventsSince, w.eventsSince)
	}
	br := conn.SendBatch(ctx, b)
	defer br.Close()

	var out []store.Event
	var sessionsSnap, eventsSnap string
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var (
			name               *string
			created, rewritten *bool
		)
		if err := rows.Scan(&sessionsSnap, &name, &created, &rewritten); err != nil {
			rows.Close()
			return nil, err
		}
		if name == nil {
			continue // nothing changed: the empty row with the snapshot
		}
		if *created {
			out = append(out, store.Event{Session: *name, Kind: store.EventCreated})
		}
		if *rewritten {
			out = append(out, store.Event{Session: *name, Kind: store.EventRewritten})
		}
		if !*created && !*rewritten {
			out = append(out, store.Event{Session: *name, Kind: store.EventAppended})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = br.Query()
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var (
			name    *string
			payload []byte
		)
		if err := rows.Scan(&eventsSnap, &name, &payload); err != nil {
			rows.Close()
			return nil, err
		}
		if name != nil {
			out = append(out, store.Event{Session: *name, Kind: store.EventPublished, Payload: payload})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := br.Close(); err != nil {
		return nil, err
	}
	w.sessionsSeen, w.eventsSeen = sessionsSnap, eventsSnap
	w.eventsSince = time.Time{}
	return out, nil
}
