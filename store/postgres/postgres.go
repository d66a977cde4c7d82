// Package postgres keeps sessions in PostgreSQL, so several `pith serve`
// hosts share them: every line of a session is a row with its exact bytes,
// id, parent and type; appends and rewrites are transactions that check
// the last entry the writer saw; a lease row with an expiry (on the
// database's clock) lets one host at a time compact or prune a session;
// what a host publishes is a pith_events row. The schema is migrated at
// Open (goose, under an advisory lock, so hosts starting together do not
// race).
//
// Each host's Watch learns of the others' changes from the tables, not
// from notifications: every change is stamped with the id of the
// transaction that made it (a trigger on the session's row; a column of
// the event's row), and a watch asks, in one indexed query per look, for
// what its previous look's snapshot did not see, so each change is
// reported once and none is missed however late it commits. A watch looks
// every pollInterval and whenever a NOTIFY wakes it: a write sends one
// after it committed, best effort, in its own statement (see waker), so a
// NOTIFY that cannot be sent — the cluster's queue filled by a role that
// LISTENs and never reads, or NOTIFY refused — delays what other hosts
// see by up to pollInterval and fails no write. A notification carries
// nothing a watch believes (anyone who may connect can send one): it is
// only a reason to look sooner.
package postgres

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/tidwall/gjson"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is the PostgreSQL store.
type Store struct {
	pool   *pgxpool.Pool
	listen *pgx.ConnConfig // for Watch's own connection
	now    func() time.Time
	waker  *waker
	warn   *warner
	closed sync.Once
}

// connectTimeout bounds a connection attempt when the URL sets none, so a
// database host that does not answer makes calls fail as unavailable
// instead of hanging.
const connectTimeout = 5 * time.Second

var _ store.Store = (*Store)(nil)

// Open connects to url (postgres://…) and brings the schema up to date.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store URL: %w", err)
	}
	return openConfig(ctx, cfg)
}

// openConfig is Open with the pool's configuration made.
func openConfig(ctx context.Context, cfg *pgxpool.Config) (*Store, error) {
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, classify(err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, classify(err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	warn := &warner{}
	return &Store{pool: pool, listen: cfg.ConnConfig.Copy(), now: time.Now, waker: newWaker(pool, warn), warn: warn}, nil
}

func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return err
	}
	sub, err := fsSub()
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("schema migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("schema migrations: %w", classify(err))
	}
	return nil
}

// Close sends a pending wake-up and closes the connections.
func (s *Store) Close() error {
	s.closed.Do(func() {
		s.waker.close()
		s.pool.Close()
	})
	return nil
}

// SetLogger is where the store says what it cannot do without failing a
// call (a NOTIFY refused, a watch that cannot look; each at most once a
// minute); it says nothing until set.
func (s *Store) SetLogger(l hclog.Logger) { s.warn.setLogger(l) }

// classify turns a lost or refused connection into store.ErrUnavailable;
// errors the database reported about a statement stay as they are.
func classify(err error) error {
	var oe ownError
	if errors.As(err, &oe) {
		return oe.error
	}
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case len(pe.Code) >= 2 && pe.Code[:2] == "08", // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03": // shutdown, cannot connect now
			return fmt.Errorf("%w: %s", store.ErrUnavailable, pe.Message)
		}
		return err
	}
	return fmt.Errorf("%w: %v", store.ErrUnavailable, err)
}

// ownError marks an error this package made (a refusal, a bad draft), as
// opposed to one from the connection, which classify may call unavailable.
type ownError struct{ error }

func (e ownError) Unwrap() error { return e.error }

func own(format string, args ...any) error { return ownError{fmt.Errorf(format, args...)} }

// row is one line of a session.
type row struct {
	seq              int64
	id, parent, kind string
	raw              []byte
}

func rowOf(seq int64, raw []byte) row {
	line := bytes.TrimRight(raw, "\r\n")
	r := row{seq: seq, raw: raw}
	if gjson.ValidBytes(line) {
		r.id = gjson.GetBytes(line, "id").String()
		r.parent = gjson.GetBytes(line, "parentId").String()
		r.kind = gjson.GetBytes(line, "type").String()
	}
	return r
}

func (s *Store) insert(ctx context.Context, tx pgx.Tx, name string, rows []row) error {
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"pith_lines"},
		[]string{"session", "seq", "id", "parent_id", "type", "raw"},
		pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			r := rows[i]
			return []any{name, r.seq, []byte(r.id), []byte(r.parent), []byte(r.kind), r.raw}, nil
		}))
	return err
}

// split cuts data into lines, each keeping its newline; a last line
// without one is kept as it is (a torn tail).
func split(data []byte) [][]byte {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// parse checks data is a session and returns its rows, its last entry id
// and whether it is in an old format (allowed only when old).
func parse(name string, data []byte, old bool) ([]row, string, bool, error) {
	f, err := session.Parse(bytes.Clone(data))
	if err != nil {
		return nil, "", false, fmt.Errorf("%s: %w", name, err)
	}
	if f.Migrated && !old {
		return nil, "", false, fmt.Errorf("%s: %w; run `pith migrate --in-place` on the file first", name, session.ErrOldVersion)
	}
	lines := split(data)
	rows := make([]row, len(lines))
	for i, l := range lines {
		rows[i] = rowOf(int64(i+1), l)
	}
	last := store.LastID(f)
	if f.Migrated {
		last = ""
	}
	return rows, last, f.Migrated, nil
}

// Create stores data as a new session.
func (s *Store) Create(ctx context.Context, name string, data []byte) error {
	if err := store.CheckName(name); err != nil {
		return err
	}
	rows, last, old, err := parse(name, data, true)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO pith_sessions (name, last_seq, last_id, old_format) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, name, int64(len(rows)), []byte(last), old)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return own("%s: %w", name, store.ErrExists)
		}
		return s.insert(ctx, tx, name, rows)
	})
}

// inTx runs fn in a transaction, committing when it returns nil, and then
// wakes the other hosts' watches (after COMMIT, never in the transaction:
// see waker). Every write that a watch reports goes through here.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error, opts ...pgx.TxOptions) error {
	var o pgx.TxOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	tx, err := s.pool.BeginTx(ctx, o)
	if err != nil {
		return classify(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := fn(tx); err != nil {
		return classify(err)
	}
	if err := tx.Commit(ctx); err != nil {
		return classify(err)
	}
	s.waker.wake()
	return nil
}

// Export returns the session's bytes (one statement: one snapshot).
func (s *Store) Export(ctx context.Context, name string) ([]byte, error) {
	if err := store.CheckName(name); err != nil {
		return nil, err
	}
	return export(ctx, s.pool, name)
}

// ExportWithin is Export that asks admit with the session's size before
// a line is fetched: the size (a sum of the lines' lengths, which the
// server finds without detoasting a long line, and sends none of them)
// and the lines are read in one read-only transaction at REPEATABLE
// READ, so in one snapshot: an append committed between the two is not
// read.
func (s *Store) ExportWithin(ctx context.Context, name string, admit func(size int64) error) ([]byte, error) {
	if err := store.CheckName(name); err != nil {
		return nil, err
	}
	if admit == nil {
		return export(ctx, s.pool, name)
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, classify(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var lines, size int64
	if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(sum(octet_length(raw)), 0) FROM pith_lines WHERE session = $1`, name).Scan(&lines, &size); err != nil {
		return nil, classify(err)
	}
	if lines == 0 {
		return nil, fmt.Errorf("%s: %w", name, store.ErrNotFound)
	}
	if err := admit(size); err != nil {
		return nil, err
	}
	return export(ctx, tx, name)
}

// export reads the session's lines in order through q, the pool (one
// statement, one snapshot) or a transaction.
func export(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, name string) ([]byte, error) {
	rows, err := q.Query(ctx, `SELECT raw FROM pith_lines WHERE session = $1 ORDER BY seq`, name)
	if err != nil {
		return nil, classify(err)
	}
	var buf bytes.Buffer
	n := 0
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			rows.Close()
			return nil, classify(err)
		}
		buf.Write(raw)
		n++
	}
	if err := rows.Err(); err != nil {
		return nil, classify(err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: %w", name, store.ErrNotFound)
	}
	return buf.Bytes(), nil
}

// tailCall reads a session's lines after $2 and its line count.
const tailCall = `SELECT last_seq, raw FROM pith_tail($1, $2)`

// TailWithin is Tail: the session's size is known only by summing its
// rows, one more statement at every catch-up, so admit is not asked (the
// Store interface says so); the caller checks the rows it gets.
func (s *Store) TailWithin(ctx context.Context, name string, after int, _ func(size int64) error) ([]byte, int, error) {
	return s.Tail(ctx, name, after)
}

// Tail reads only the rows after line after, and the line count, in one
// snapshot.
func (s *Store) Tail(ctx context.Context, name string, after int) ([]byte, int, error) {
	if err := store.CheckName(name); err != nil {
		return nil, 0, err
	}
	// One statement, so one snapshot and one round trip without a
	// transaction: the session's lines after after (none: one row with a
	// NULL line), every row carrying the count. pith serve calls this
	// before every call on a stored session: pith_tail (migration 00009)
	// keeps one plan, where the query as a statement was planned anew at
	// every call once the sessions had grown.
	rows, err := s.pool.Query(ctx, tailCall, name, after)
	if err != nil {
		return nil, 0, classify(err)
	}
	defer rows.Close()
	var buf bytes.Buffer
	var n int64
	found := false
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&n, &raw); err != nil {
			return nil, 0, classify(err)
		}
		found = true
		buf.Write(raw)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, classify(err)
	}
	if !found {
		return nil, 0, fmt.Errorf("%s: %w", name, store.ErrNotFound)
	}
	if buf.Len() == 0 {
		return nil, int(n), nil
	}
	return buf.Bytes(), int(n), nil
}

// Load parses the session.
func (s *Store) Load(ctx context.Context, name string) (*session.File, error) {
	data, err := s.Export(ctx, name)
	if err != nil {
		return nil, err
	}
	return session.Parse(data)
}

// lockSession locks the session's row for the transaction and returns its
// last line number and last entry id.
func lockSession(ctx context.Context, tx pgx.Tx, name string) (int64, string, bool, error) {
	var seq int64
	var last []byte
	var old bool
	err := tx.QueryRow(ctx, `SELECT last_seq, last_id, old_format FROM pith_sessions WHERE name = $1 FOR NO KEY UPDATE`, name).Scan(&seq, &last, &old)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", false, own("%s: %w", name, store.ErrNotFound)
	}
	return seq, string(last), old, err
}

// checkLease locks the lease row for the transaction when lease still
// holds it, so a takeover waits for the commit; clock_timestamp, not
// now(): the transaction may have begun before the lease ran out.
func checkLease(ctx context.Context, tx pgx.Tx, lease store.Lease) error {
	var held bool
	if err := tx.QueryRow(ctx, `SELECT true FROM pith_leases WHERE session = $1 AND holder = $2 AND expires_at > clock_timestamp() FOR UPDATE`, lease.Session, lease.Holder).Scan(&held); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if !held {
		return own("%s: %w", lease.Session, store.ErrLeaseLost)
	}
	return nil
}

// Rewrite replaces the session's lines while the lease holds (checked on
// the database's clock, in the same transaction).
func (s *Store) Rewrite(ctx context.Context, lease store.Lease, expectLast string, data []byte, sidecars ...store.SidecarChange) error {
	name := lease.Session
	if err := store.CheckName(name); err != nil {
		return err
	}
	for _, sc := range sidecars {
		if err := store.CheckSidecar(name, sc.Suffix); err != nil {
			return err
		}
	}
	rows, newLast, _, err := parse(name, data, false)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		_, last, _, err := lockSession(ctx, tx, name)
		if err != nil {
			return err
		}
		if err := checkLease(ctx, tx, lease); err != nil {
			return err
		}
		if last != expectLast {
			return own("%s: %w", name, store.ErrConflict)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM pith_lines WHERE session = $1`, name); err != nil {
			return err
		}
		if err := s.insert(ctx, tx, name, rows); err != nil {
			return err
		}
		// The count moving is what marks a rewrite (the table's trigger
		// stamps rewritten_xid), for the watches.
		if _, err := tx.Exec(ctx, `UPDATE pith_sessions SET last_seq = $2, last_id = $3, old_format = false, rewrites = rewrites + 1 WHERE name = $1`, name, int64(len(rows)), []byte(newLast)); err != nil {
			return err
		}
		for _, sc := range sidecars {
			if _, err := tx.Exec(ctx, `
				INSERT INTO pith_sidecars (session, suffix, data) VALUES ($1, $2, $4)
				ON CONFLICT (session, suffix) DO UPDATE SET data =
					CASE WHEN $3 >= 0 THEN substring(pith_sidecars.data FROM 1 FOR $3::int) ELSE pith_sidecars.data END || excluded.data`,
				name, sc.Suffix, sc.Keep, nonNil(sc.Append)); err != nil {
				return err
			}
		}
		return nil
	})
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// ReadSidecar returns the sidecar row's bytes; nil when there is none.
func (s *Store) ReadSidecar(ctx context.Context, name, suffix string) ([]byte, error) {
	if err := store.CheckSidecar(name, suffix); err != nil {
		return nil, err
	}
	var data []byte
	err := s.pool.QueryRow(ctx, `SELECT data FROM pith_sidecars WHERE session = $1 AND suffix = $2`, name, suffix).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, classify(err)
	}
	return data, nil
}

// Publish keeps the payload in a pith_events row, which every host's
// Watch reads; rows older than eventsKept go in the same statement (one
// round trip, one implicit transaction). The cut is on the statement's
// timestamp, not clock_timestamp(): a volatile bound cannot use the index
// on at, and every publish read the whole table, ten minutes of every
// host's events, more as a run went on.
func (s *Store) Publish(ctx context.Context, name string, payload []byte) error {
	if err := store.CheckName(name); err != nil {
		return err
	}
	if len(payload) > store.MaxPayload {
		return fmt.Errorf("%s: %w (%d bytes, at most %d)", name, store.ErrPayloadTooLarge, len(payload), store.MaxPayload)
	}
	if !json.Valid(payload) {
		return fmt.Errorf("%s: the event payload is not JSON", name)
	}
	_, err := s.pool.Exec(ctx, `WITH gone AS (
			DELETE FROM pith_events WHERE id IN (
				SELECT id FROM pith_events WHERE at < statement_timestamp() - interval '`+eventsKept+`' FOR UPDATE SKIP LOCKED))
		INSERT INTO pith_events (session, payload) VALUES ($1, $2)`, name, payload)
	if err != nil {
		return classify(err)
	}
	s.waker.wake()
	return nil
}

// AcquireLease takes the lease row when it is free, expired or already
// holder's, in one statement.
func (s *Store) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, error) {
	if err := store.CheckName(name); err != nil {
		return store.Lease{}, err
	}
	if holder == "" {
		return store.Lease{}, errors.New("a lease holder is not empty")
	}
	var expires time.Time
	err := s.pool.QueryRow(ctx, `
		INSERT INTO pith_leases (session, holder, expires_at)
		SELECT $1, $2, clock_timestamp() + $3 * interval '1 microsecond' FROM pith_sessions WHERE name = $1
		ON CONFLICT (session) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
			WHERE pith_leases.holder = excluded.holder OR pith_leases.expires_at <= clock_timestamp()
		RETURNING expires_at`, name, holder, ttl.Microseconds()).Scan(&expires)
	if errors.Is(err, pgx.ErrNoRows) {
		var exists bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pith_sessions WHERE name = $1)`, name).Scan(&exists); err != nil {
			return store.Lease{}, classify(err)
		}
		if !exists {
			return store.Lease{}, fmt.Errorf("%s: %w", name, store.ErrNotFound)
		}
		return store.Lease{}, fmt.Errorf("%s: %w", name, store.ErrLeaseHeld)
	}
	if err != nil {
		return store.Lease{}, classify(err)
	}
	return store.Lease{Session: name, Holder: holder, Expires: expires}, nil
}

// RenewLease moves the lease row's expiry when the row is still the
// holder's. It never inserts one: a row that is gone was released or
// taken over (a takeover replaces the holder), so the lease was lost
// even if nobody holds it now.
func (s *Store) RenewLease(ctx context.Context, lease store.Lease, ttl time.Duration) (store.Lease, error) {
	if err := store.CheckName(lease.Session); err != nil {
		return store.Lease{}, err
	}
	var expires time.Time
	err := s.pool.QueryRow(ctx, `
		UPDATE pith_leases SET expires_at = clock_timestamp() + $3 * interval '1 microsecond'
		WHERE session = $1 AND holder = $2
		RETURNING expires_at`, lease.Session, lease.Holder, ttl.Microseconds()).Scan(&expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Lease{}, fmt.Errorf("%s: %w", lease.Session, store.ErrLeaseLost)
	}
	if err != nil {
		return store.Lease{}, classify(err)
	}
	return store.Lease{Session: lease.Session, Holder: lease.Holder, Expires: expires}, nil
}

// ReleaseLease deletes the lease row if lease still holds it.
func (s *Store) ReleaseLease(ctx context.Context, lease store.Lease) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM pith_leases WHERE session = $1 AND holder = $2`, lease.Session, lease.Holder)
	return classify(err)
}

// List returns every session's name.
func (s *Store) List(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT name FROM pith_sessions ORDER BY name`)
	if err != nil {
		return nil, classify(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return names, classify(err)
}

func fsSub() (fs.FS, error) { return fs.Sub(migrations, "migrations") }
