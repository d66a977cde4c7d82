package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// waker tells the other hosts' watches, with NOTIFY, that something was
// written, after the write committed and never as part of it.
//
// Why not inside the writing transaction, as NOTIFY is usually sent: the
// notification queue is one per cluster and bounded, and any role that
// may connect can LISTEN and never read; once the queue is full every
// transaction that sent a NOTIFY fails at COMMIT, so every append,
// rewrite and publish of every host would fail with it. Keeping NOTIFY in
// the transaction with a fallback would mean noticing that failure at
// COMMIT and running the whole write again without it. Here the record of
// a change is what the transaction wrote (the session's row, the
// pith_events row, stamped with the transaction's id, migration 00006);
// the notification only makes watches look sooner, and a watch also looks
// by itself every pollInterval, so one lost (the queue full, NOTIFY
// refused, this process killed between COMMIT and NOTIFY) delays an
// event, never loses it.
//
// Wake-ups are coalesced: one pending at a time, sent by one goroutine,
// empty (a watch reads what changed from the tables, whoever announced
// it), at most one per sendGap, so a burst of writes costs one NOTIFY,
// not one each, and a writer never waits for it.
type waker struct {
	pool *pgxpool.Pool
	warn *warner
	kick chan struct{} // holds the one pending wake-up
	stop chan struct{}
	done chan struct{}
}

// wakeTimeout bounds one NOTIFY: a database that does not answer delays
// the next wake-up, not a write.
const wakeTimeout = 5 * time.Second

func newWaker(pool *pgxpool.Pool, warn *warner) *waker {
	w := &waker{
		pool: pool,
		warn: warn,
		kick: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go w.run()
	return w
}

// wake asks for a NOTIFY soon; it never blocks.
func (w *waker) wake() {
	select {
	case w.kick <- struct{}{}:
	default: // one is pending already: it covers this write too
	}
}

// sendGap is the least time between two wake-ups sent: a watch looks
// no sooner than wakeGap after its last look anyway, so under a stream of
// writes one NOTIFY per sendGap wakes it as soon as one per write would,
// and the store makes a few round trips a second for it instead of
// hundreds.
const sendGap = wakeGap / 2

func (w *waker) run() {
	defer close(w.done)
	for {
		select {
		case <-w.kick:
			w.send()
		case <-w.stop:
			w.last()
			return
		}
		select {
		case <-time.After(sendGap):
		case <-w.stop:
			w.last()
			return
		}
	}
}

// last sends the wake-up of a write just before Close now rather than
// leaving it to the watches' next poll.
func (w *waker) last() {
	select {
	case <-w.kick:
		w.send()
	default:
	}
}

func (w *waker) send() {
	ctx, cancel := context.WithTimeout(context.Background(), wakeTimeout)
	defer cancel()
	if _, err := w.pool.Exec(ctx, "SELECT pg_notify($1, '')", channel); err != nil {
		w.warn.warn("notify", "cannot notify the other hosts of a change; they will see it at their next poll (about a second)", classify(err))
	}
}

// close sends a pending wake-up and stops.
func (w *waker) close() {
	close(w.stop)
	<-w.done
}
