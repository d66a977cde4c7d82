package postgres

import (
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// warnEvery is how often one kind of failure that does not fail a call
// (a NOTIFY refused, a watch that cannot look) is logged while it keeps
// happening: a full notification queue fails every wake-up, and one line
// a minute says so.
const warnEvery = time.Minute

// warner logs what the store cannot do without failing a call, each kind
// at most once per warnEvery, with the count of failures since the last
// line; it says nothing until it has a logger.
type warner struct {
	mu    sync.Mutex
	log   hclog.Logger
	kinds map[string]*warned
}

type warned struct {
	failures int       // since the last line
	at       time.Time // of the last line
}

func (w *warner) setLogger(l hclog.Logger) {
	w.mu.Lock()
	w.log = l
	w.mu.Unlock()
}

// warn counts a failure of kind and logs msg when the last line about
// kind is warnEvery old.
func (w *warner) warn(kind, msg string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.kinds == nil {
		w.kinds = map[string]*warned{}
	}
	k := w.kinds[kind]
	if k == nil {
		k = &warned{}
		w.kinds[kind] = k
	}
	k.failures++
	if now := time.Now(); w.log != nil && now.Sub(k.at) >= warnEvery {
		w.log.Warn(msg, "error", err, "failures", k.failures)
		k.failures, k.at = 0, now
	}
}
