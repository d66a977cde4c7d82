package server

import (
	"sync"
	"time"

	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/hooks"
)

// maxLastRuns bounds how many sessions' last runs the daemon remembers;
// past it the oldest run is forgotten.
const maxLastRuns = 4096

// LastRun is how the last compaction the daemon ran for a session ended,
// with the hook calls of that run. A run a plugin cancelled writes no
// entry, so this is the only place its timeline (and the cancel reason)
// can be read.
type LastRun struct {
	// Session is the session's id; Name the name it was opened by.
	Session, Name string
	Time          time.Time
	Reason        engine.Reason
	// EntryID is the saved compaction; "" when the run saved nothing.
	EntryID   string
	Cancelled bool
	Aborted   bool
	// Plugin names the plugin that cancelled or supplied the compaction.
	Plugin   string
	Error    string
	Timeline []hooks.TimelineStep
}

// lastRuns keeps the LastRun of each session, in memory only: it outlives
// the session's eviction, not the daemon.
type lastRuns struct {
	mu   sync.Mutex
	runs map[string]LastRun // by session name
}

func (l *lastRuns) record(o *openSession, ev engine.Event) {
	if ev.Kind != engine.EventCompactionEnd {
		return
	}
	run := LastRun{
		Session: o.id, Time: ev.Time, Reason: ev.Reason, EntryID: ev.EntryID,
		Cancelled: ev.Cancelled, Aborted: ev.Aborted, Plugin: ev.Plugin, Error: ev.Error, Timeline: ev.Timeline,
	}
	if run.Time.IsZero() {
		run.Time = time.Now()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs == nil {
		l.runs = map[string]LastRun{}
	}
	// Under every name the session was opened by: the viewer's panel of
	// each name shows it.
	for _, name := range o.nameList() {
		if _, ok := l.runs[name]; !ok && len(l.runs) >= maxLastRuns {
			oldest := ""
			for n, r := range l.runs {
				if oldest == "" || r.Time.Before(l.runs[oldest].Time) {
					oldest = n
				}
			}
			delete(l.runs, oldest)
		}
		run.Name = name
		l.runs[name] = run
	}
}

// lastRunByName is LastRun by the name the session was opened by.
func (s *Server) lastRunByName(name string) (LastRun, bool) {
	s.lastRuns.mu.Lock()
	defer s.lastRuns.mu.Unlock()
	r, ok := s.lastRuns.runs[name]
	return r, ok
}

// LastRun returns the last compaction run the daemon made for the session
// with this id since it started, if any.
func (s *Server) LastRun(sessionID string) (LastRun, bool) {
	s.lastRuns.mu.Lock()
	defer s.lastRuns.mu.Unlock()
	var found LastRun
	ok := false
	for _, r := range s.lastRuns.runs {
		if r.Session == sessionID && (!ok || r.Time.After(found.Time)) {
			found, ok = r, true
		}
	}
	return found, ok
}
