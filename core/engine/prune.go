package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/session"
)

// PruneResult describes one tool-output pruning.
type PruneResult struct {
	// Pruned counts the tool results replaced by a notice; Saving is the
	// estimated tokens that frees.
	Pruned int
	Saving int
	// TokensBefore and TokensAfter are the context tokens around it.
	TokensBefore int
	TokensAfter  int
	// Archive is the sidecar file holding the originals.
	Archive string
}

// Prune replaces old tool outputs on the current branch by a notice when
// that saves at least s.Minimum tokens (docs/behaviour.md §8), through the same lossless
// archive as `pith prune`, and rebuilds the live context. A nil result
// with a nil error means nothing was worth pruning.
func (s *Session) Prune(ctx context.Context, ps compaction.PruneSettings) (*PruneResult, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	return s.prune(ps)
}

// autoPrune is the turn-end pruning: it runs only when enabled and when a
// plan may find something (see liveContext.newTools). A failure is logged
// and reported as an event; it never fails the turn, whose message is
// already saved. The caller holds the operation lock.
func (s *Session) autoPrune(st Settings) *PruneResult {
	p := st.Pruning
	if !p.Enabled {
		return nil
	}
	s.mu.Lock()
	// Thinking pruning (opt-in) has something new every turn: it plans
	// on each.
	due := s.live.newTools && s.live.toolTokens >= p.Minimum || p.Thinking > 0
	s.live.newTools = false
	s.mu.Unlock()
	if !due {
		return nil
	}
	res, err := s.prune(p.PruneSettings)
	if errors.Is(err, session.ErrLeaseHeld) {
		// Another host is compacting or pruning this shared session.
		s.log.Debug("automatic pruning skipped", "error", err)
		return nil
	}
	if err != nil {
		s.log.Warn("automatic pruning failed", "error", err)
		s.emit(Event{Kind: EventPruned, Error: fmt.Sprintf("automatic pruning failed: %v", err)})
		return nil
	}
	return res
}

// prune plans and applies one pruning through compaction.Prune, the one
// prune change of a session (`pith prune` uses it too), then rebuilds the
// live context. The caller holds the operation lock.
func (s *Session) prune(ps compaction.PruneSettings) (*PruneResult, error) {
	// A plan on the tree in memory first: most turns have nothing worth
	// pruning, and compaction.Prune plans again under the file's lock.
	leaf := s.store.Leaf()
	if leaf == nil || len(compaction.PlanPrune(s.store.Tree().Path(leaf), ps).Items) == 0 {
		return nil, nil
	}
	plan, err := compaction.Prune(s.store, ps, time.Now())
	if err != nil {
		return nil, err
	}
	if len(plan.Items) == 0 {
		return nil, nil
	}
	archive := s.store.SidecarPath(compaction.ArchiveSuffix)

	saving := make(map[string]int, len(plan.Items))
	for _, it := range plan.Items {
		saving[it.EntryID] = it.Saving
	}
	s.mu.Lock()
	before := s.live.acct.tokens()
	lc := buildLive(s.store.Tree(), s.store.Leaf())
	// The measured usage still counts the outputs just pruned; results
	// after it are estimated afresh by buildLive.
	if lc.acct.usageAt >= 0 {
		for _, m := range lc.messages[:lc.acct.usageAt] {
			lc.acct.usage -= saving[m.EntryID]
		}
		lc.acct.usage = max(lc.acct.usage, 0)
	}
	kept := lc.messages[:0]
	for _, m := range lc.messages {
		if s.inContext(m) {
			kept = append(kept, m)
		}
	}
	lc.messages = kept
	lc.countTools()
	lc.newTools = false
	s.live = lc
	after := lc.acct.tokens()
	s.mu.Unlock()

	res := &PruneResult{Pruned: len(plan.Items), Saving: plan.Saving, TokensBefore: before, TokensAfter: after, Archive: archive}
	s.log.Info("tool outputs pruned", "pruned", res.Pruned, "saving", res.Saving, "tokens_before", before, "tokens_after", after)
	s.emit(Event{Kind: EventPruned, TokensBefore: before, TokensAfter: after, Pruned: res.Pruned})
	return res, nil
}
