// Package store is where sessions live: an interface with two
// implementations, files (store/files: pi's JSONL files under one
// directory, written through its write protocol) and PostgreSQL
// (store/postgres), so several `pith serve` hosts can share sessions.
//
// A session is addressed by the same safe name in every store (CheckName)
// and keeps its exact bytes: Export of an imported session is the file it
// came from.
//
// Session (OpenSession) is what the engine works on for a stored session
// (a session.Backend): the session parsed in memory and caught up through
// Tail, appends that commit only against the last entry this host saw,
// compaction and prune under the session's lease, and prune's archive
// kept in the store in the same step as the rewrite.
package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/sessionname"
)

// Errors callers branch on.
var (
	ErrExists   = errors.New("the session already exists")
	ErrNotFound = errors.New("no such session")
	// ErrConflict: the session's last entry is no longer the one the
	// writer saw; nothing was written. Read it again and retry. (The
	// engine branches on it too, hence core/session's.)
	ErrConflict = session.ErrConflict
	// ErrLeaseHeld: another holder has the session's lease and it has not
	// expired.
	ErrLeaseHeld = session.ErrLeaseHeld
	// ErrLeaseLost: the lease expired or was taken over; nothing was written.
	ErrLeaseLost = session.ErrLeaseLost
	// ErrUnavailable: the store cannot be reached; nothing was written.
	// Retrying later is safe.
	ErrUnavailable = errors.New("the session store is unavailable")
	// ErrPayloadTooLarge refuses a Publish payload over MaxPayload.
	ErrPayloadTooLarge = errors.New("the event payload is too large")
)

// MaxPayload bounds a Publish payload: an engine event's fields, kept by
// the store for every watcher (a pith_events row in PostgreSQL, whose
// NOTIFY carries only the row's id).
const MaxPayload = 7000

// Store keeps sessions. Every method is safe for concurrent use, also
// from several processes (or hosts, for a shared database).
type Store interface {
	// Create stores data (a whole JSONL session, header first) as a new
	// session, byte for byte; ErrExists when the name is taken.
	Create(ctx context.Context, name string, data []byte) error
	// Export returns the session's exact bytes.
	Export(ctx context.Context, name string) ([]byte, error)
	// ExportWithin is Export that first asks admit (nil: any size) with
	// the session's size, a torn last line's bytes included, and reads
	// nothing when admit refuses: its error comes back as it is. The size
	// is taken under the same lock, or in the same snapshot, as the read,
	// and the read takes exactly those bytes, so what a session grew by
	// in between is never read unasked. It is how a bound on what a host
	// holds (SessionOptions.Admit) keeps a session of gigabytes out of
	// memory, instead of refusing it once it is in.
	ExportWithin(ctx context.Context, name string, admit func(size int64) error) ([]byte, error)
	// Load parses the session.
	Load(ctx context.Context, name string) (*session.File, error)
	// Tail returns the session's lines after the first after lines (each
	// with its newline, a torn last one without) and the count of lines
	// now: how a reader that has the head catches up with appends. After
	// a rewrite (EventRewritten) line numbers change: Load again.
	Tail(ctx context.Context, name string, after int) ([]byte, int, error)
	// TailWithin is Tail that first asks admit (nil: any size) with the
	// session's whole size, a torn last line's bytes included, when the
	// store can tell it without reading, and reads nothing when admit
	// refuses. The files store can (a stat under the read's lock), so a
	// file another program grew by gigabytes is refused unread.
	// PostgreSQL cannot without summing the session's rows at every
	// catch-up, so it does not ask: what it returns are other hosts'
	// appends, each admitted by the host that made it, and its caller
	// checks what it got.
	TailWithin(ctx context.Context, name string, after int, admit func(size int64) error) ([]byte, int, error)
	// Append adds drafts as a chain of new entries, the first a child of
	// Draft.Parent or else of expectLast, in one all-or-nothing step that
	// commits only when the session's last entry (in order; "" for none)
	// is still expectLast — ErrConflict otherwise.
	Append(ctx context.Context, name, expectLast string, drafts ...session.Draft) ([]*session.Entry, error)
	// AppendLeased is Append that also commits only while lease is held
	// (ErrLeaseLost otherwise, nothing written): a compaction's commit.
	AppendLeased(ctx context.Context, lease Lease, expectLast string, drafts ...session.Draft) ([]*session.Entry, error)
	// Rewrite replaces the session with data (prune, restore, migrate)
	// and applies the sidecar changes, in one step, while the lease is
	// held and the session's last entry is still expectLast; ErrLeaseLost
	// or ErrConflict otherwise, nothing written.
	Rewrite(ctx context.Context, lease Lease, expectLast string, data []byte, sidecars ...SidecarChange) error
	// ReadSidecar returns the session's companion with the suffix (the
	// prune archive: compaction.ArchiveSuffix); nil when there is none.
	ReadSidecar(ctx context.Context, name, suffix string) ([]byte, error)
	// Publish delivers an EventPublished with payload (at most
	// MaxPayload bytes) about the session to every Watch: how a host
	// tells the others what its engine did (compaction started, saved…).
	// The files store delivers it to the Watches of this Store value.
	Publish(ctx context.Context, name string, payload []byte) error
	// AcquireLease gives holder the session's lease for ttl, or renews it
	// when holder has it; ErrLeaseHeld while another holder's is unexpired.
	// One holder at a time runs a session's compaction or prune.
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (Lease, error)
	// RenewLease extends lease, ttl from now, while it is still its
	// holder's; ErrLeaseLost once another holder took it or it was
	// released — also when that holder has given it back since: a renewal
	// that arrives late never takes the lease again, as AcquireLease
	// would, after someone else worked under it.
	RenewLease(ctx context.Context, lease Lease, ttl time.Duration) (Lease, error)
	// ReleaseLease ends a lease early; releasing a lost lease is no error.
	ReleaseLease(ctx context.Context, lease Lease) error
	// Watch delivers an Event for every change made through any Store on
	// the same storage, until ctx ends (then the channel closes).
	Watch(ctx context.Context) (<-chan Event, error)
	// List returns every session's name, sorted.
	List(ctx context.Context) ([]string, error)
	Close() error
}

// Lease is the right to rewrite or compact one session until Expires.
type Lease struct {
	Session string
	Holder  string
	Expires time.Time
}

// Event kinds.
const (
	EventCreated   = "created"
	EventAppended  = "appended"
	EventRewritten = "rewritten"
	// EventPublished carries a Publish payload; nothing changed.
	EventPublished = "published"
	// EventResync (Session empty): the watch cannot tell what changed
	// for a while (it was interrupted; for a database, the server was
	// restarted or replaced), so a watcher rereads every session it keeps
	// in memory.
	EventResync = "resync"
)

// Event says a session changed, or carries what a host published.
type Event struct {
	Session string          `json:"session"`
	Kind    string          `json:"kind"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// SidecarChange is what a Rewrite does to one sidecar: cut it to Keep
// bytes (a torn record's repair; negative keeps all), then append Append.
type SidecarChange struct {
	Suffix string
	Keep   int64
	Append []byte
}

// maxSuffixBytes bounds a sidecar suffix.
const maxSuffixBytes = 64

// CheckSidecar refuses a session name outside the grammar, and a sidecar
// suffix that would not name a session companion: a dot, then letters,
// digits, '.', '_' or '-' (no '/'), ending in ".jsonl". The name and the
// suffix are checked apart, not as one name: a session whose name is as
// long as the grammar allows has its companions too (rows in a database;
// in a sessions directory the companion of a long name is cut to fit,
// session.SideName).
func CheckSidecar(name, suffix string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if len(suffix) < 2 || len(suffix) > maxSuffixBytes || suffix[0] != '.' ||
		!sessionname.SafeSegment(suffix[1:]) || !strings.HasSuffix(suffix, ".jsonl") {
		return fmt.Errorf("%w: sidecar suffix %q", ErrInvalidName, suffix)
	}
	return nil
}

// TailOf is Tail over a whole session's bytes.
func TailOf(data []byte, after int) ([]byte, int) {
	n, cut := 0, len(data)
	for i := 0; i < len(data); i++ {
		if n == after && cut == len(data) {
			cut = i
		}
		if data[i] == '\n' {
			n++
		}
	}
	if n == after && cut == len(data) {
		cut = len(data)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++ // the torn last line counts
	}
	if after >= n {
		return nil, n
	}
	return data[cut:], n
}

// AfterLast is the check every reader that follows a session by line
// numbers makes before it takes lines as new: data is what Tail returned
// from the reader's last line on (after its count less one) and last is
// that line as the reader took it, without its newline. The lines after
// the count are the new ones only when data still starts with that line:
// another host's rewrite drops blank lines and moves every later line
// up, and appends can bring the count back past the reader's, so line
// numbers alone skip or repeat entries. ok false: read the session
// whole. rest is what follows the line and its newline.
func AfterLast(data, last []byte) (rest []byte, ok bool) {
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	if !bytes.Equal(first, last) {
		return nil, false
	}
	return rest, true
}

// LastID is the id of f's last entry in order, or "" for none: what
// Append and Rewrite compare expectLast with. A file in an old format
// (read through a migration) has "": its ids exist only in memory.
func LastID(f *session.File) string {
	if len(f.Entries) == 0 || f.Migrated {
		return ""
	}
	return f.Entries[len(f.Entries)-1].ID
}
