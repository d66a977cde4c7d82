package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/regularfile"
	"github.com/pith-dev/pith/store"
)

// LeaseSuffix names the file beside a session that holds its lease in the
// files store.
const LeaseSuffix = ".lease"

// AppendLeased is Append under the lease file's lock, after checking
// lease still holds.
func (f *Store) AppendLeased(ctx context.Context, lease store.Lease, expectLast string, drafts ...session.Draft) ([]*session.Entry, error) {
	var entries []*session.Entry
	err := f.withLease(lease, func() error {
		var err error
		entries, err = f.Append(ctx, lease.Session, expectLast, drafts...)
		return err
	})
	return entries, err
}

// withLease runs fn holding the lease file's lock, when lease is still
// the session's, so no takeover interleaves.
func (f *Store) withLease(lease store.Lease, fn func() error) error {
	return f.withLeaseFile(lease.Session, func(h Handle) error {
		holder, expires, err := readLease(h)
		if err != nil {
			return err
		}
		if holder != lease.Holder || !time.Now().Before(expires) {
			return fmt.Errorf("%s: %w", lease.Session, store.ErrLeaseLost)
		}
		return fn()
	})
}

// withLeaseFile runs fn with the session's lease file open and locked.
func (f *Store) withLeaseFile(name string, fn func(h Handle) error) error {
	dir, base, err := f.dirOf(name, false)
	if err != nil {
		return err
	}
	defer dir.Close()
	if _, err := dir.Lstat(base); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %w", name, store.ErrNotFound)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	// Never through a link in its place: taking a lease truncates the
	// file and writes it, whatever a link planted there leads to.
	h, _, err := regularfile.OpenOrCreate(session.SideName("", base, LeaseSuffix), os.O_RDWR, 0o644, dir.Lstat, NewRootFS(dir).OpenFile)
	if err != nil {
		return fmt.Errorf("%s: lease: %w", name, err)
	}
	defer h.Close()
	if err := h.Lock(true); err != nil {
		return fmt.Errorf("%s: lease: %w", name, err)
	}
	defer h.Unlock()
	return fn(h)
}

// readLease reads "holder\nexpiry-unix-nanos\n"; an empty file is no lease.
func readLease(h Handle) (string, time.Time, error) {
	st, err := h.Stat()
	if err != nil {
		return "", time.Time{}, err
	}
	buf := make([]byte, min(st.Size(), 4096))
	if _, err := h.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return "", time.Time{}, err
	}
	holder, rest, ok := strings.Cut(string(buf), "\n")
	if !ok {
		return "", time.Time{}, nil
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
	if err != nil {
		return "", time.Time{}, nil // a torn lease file holds nothing
	}
	return holder, time.Unix(0, ns), nil
}

func writeLease(h Handle, holder string, expires time.Time) error {
	if err := h.Truncate(0); err != nil {
		return err
	}
	w, ok := h.(io.WriterAt)
	if !ok {
		return errors.New("lease file cannot be written at an offset")
	}
	if _, err := w.WriteAt([]byte(holder+"\n"+strconv.FormatInt(expires.UnixNano(), 10)+"\n"), 0); err != nil {
		return err
	}
	return h.Sync()
}

// AcquireLease takes or renews the lease under the lease file's lock.
func (f *Store) AcquireLease(_ context.Context, name, holder string, ttl time.Duration) (store.Lease, error) {
	if holder == "" || strings.Contains(holder, "\n") {
		return store.Lease{}, errors.New("a lease holder is a non-empty single line")
	}
	var l store.Lease
	err := f.withLeaseFile(name, func(h Handle) error {
		cur, expires, err := readLease(h)
		if err != nil {
			return err
		}
		now := time.Now()
		if cur != "" && cur != holder && now.Before(expires) {
			return fmt.Errorf("%s: %w (%s, until %s)", name, store.ErrLeaseHeld, cur, expires.UTC().Format(time.RFC3339))
		}
		l = store.Lease{Session: name, Holder: holder, Expires: now.Add(ttl)}
		return writeLease(h, holder, l.Expires)
	})
	return l, err
}

// RenewLease rewrites the lease file's expiry when the file still names
// lease's holder; an emptied file (released) or another holder's is a
// lost lease, never taken again here.
func (f *Store) RenewLease(_ context.Context, lease store.Lease, ttl time.Duration) (store.Lease, error) {
	var l store.Lease
	err := f.withLeaseFile(lease.Session, func(h Handle) error {
		cur, _, err := readLease(h)
		if err != nil {
			return err
		}
		if cur == "" || cur != lease.Holder {
			return fmt.Errorf("%s: %w", lease.Session, store.ErrLeaseLost)
		}
		l = store.Lease{Session: lease.Session, Holder: lease.Holder, Expires: time.Now().Add(ttl)}
		return writeLease(h, lease.Holder, l.Expires)
	})
	return l, err
}

// ReleaseLease empties the lease file when lease still holds it.
func (f *Store) ReleaseLease(_ context.Context, lease store.Lease) error {
	return f.withLeaseFile(lease.Session, func(h Handle) error {
		cur, _, err := readLease(h)
		if err != nil || cur != lease.Holder {
			return err
		}
		if err := h.Truncate(0); err != nil {
			return err
		}
		return h.Sync()
	})
}
