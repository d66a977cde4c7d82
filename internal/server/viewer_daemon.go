package server

import (
	"net/http"
	"time"

	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/pluginhost"
)

// reloadRecord is the last configuration reload's result, and how many
// configurations were applied since start (the generation in force).
type reloadRecord struct {
	Generation int       `json:"generation"`
	Last       *lastLoad `json:"lastReload,omitempty"`
}

// lastLoad is what the viewer's users see of a reload: not why one was
// rejected, which is the operator's (the daemon logs it) — the reason
// quotes the configuration, token prefixes of other tenants included.
type lastLoad struct {
	Time    time.Time `json:"time"`
	Outcome string    `json:"outcome"` // applied, rejected or unchanged
}

func (s *Server) recordReload(r config.Result) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	l := &lastLoad{Time: time.Now(), Outcome: "unchanged"}
	switch {
	case r.Applied:
		l.Outcome = "applied"
		s.reload.Generation++
	case r.Err != nil:
		l.Outcome = "rejected"
	}
	s.reload.Last = l
}

type daemonPanel struct {
	LastRun *lastRunJSON   `json:"lastRun"`
	Plugins []pluginStatus `json:"plugins"`
	Config  reloadRecord   `json:"config"`
}

type lastRunJSON struct {
	Time      time.Time            `json:"time"`
	Reason    string               `json:"reason"`
	EntryID   string               `json:"entryId,omitempty"`
	Cancelled bool                 `json:"cancelled,omitempty"`
	Aborted   bool                 `json:"aborted,omitempty"`
	Plugin    string               `json:"plugin,omitempty"`
	Error     string               `json:"error,omitempty"`
	Timeline  []hooks.TimelineStep `json:"timeline"`
}

type pluginStatus struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	State   string `json:"state"`
	// Restarts counts the crashes (each restarted, or the last disabling
	// the plugin); LastError is why the last one happened.
	Restarts  int    `json:"restarts"`
	LastError string `json:"lastError,omitempty"`
}

// daemonPanel is the viewer's api/daemon of the session name: its last
// compaction run, the plugins and the configuration generation.
func (v *Viewer) daemonPanel(_ *http.Request, name string) any {
	s := v.s
	var out daemonPanel
	if run, ok := s.lastRunByName(name); ok {
		out.LastRun = &lastRunJSON{Time: run.Time, Reason: string(run.Reason), EntryID: run.EntryID, Cancelled: run.Cancelled,
			Aborted: run.Aborted, Plugin: run.Plugin, Error: run.Error, Timeline: run.Timeline}
	}
	s.mu.Lock()
	set := append([]hooks.Plugin(nil), s.pluginSet...)
	s.mu.Unlock()
	for _, p := range set {
		st := pluginStatus{Name: p.Info().Name, State: "running"}
		if sup, ok := p.(*pluginhost.Supervisor); ok {
			st.State = sup.State().String()
			st.Version = sup.Description().Version
			st.Restarts, st.LastError = sup.Crashes()
		}
		out.Plugins = append(out.Plugins, st)
	}
	s.reloadMu.Lock()
	out.Config = s.reload
	s.reloadMu.Unlock()
	return out
}
