package server

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/propose"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
	"google.golang.org/grpc"
)

// Propose is the propose mode (docs/pi.md) as a call: the session file is
// read once, read-only, and never registered or opened for writing — its
// owner (pi) is its only writer; the call runs the pipeline `pith
// propose` runs, with the daemon's warm plugins, summarizer and the
// configuration in force when it starts. It is a call like any other for
// the interceptors (credentials, the caller's slot) and is held to the
// caller's token prefix and server.maxSessionBytes.
func (v *service) Propose(req *pb.ProposeRequest, stream grpc.ServerStreamingServer[pb.ProposeResponse]) error {
	start := time.Now()
	defer v.s.metrics.since("Propose", start)
	ctx := stream.Context()
	s := v.s
	rel := req.GetPath()
	if err := checkName(rel); err != nil {
		return toStatus(err)
	}
	if err := authorize(ctx, rel); err != nil {
		return toStatus(err)
	}
	preq, err := propose.Decode(req.GetOperation(), req.GetRequest())
	if err != nil {
		return toStatus(fmt.Errorf("%w: %w", errInvalid, err))
	}
	cfg := s.cfg.Load()
	f, err := s.src.Load(ctx, rel, int64(cfg.Server.MaxSessionBytes))
	if err != nil {
		return toStatus(err)
	}
	if f.Migrated {
		return toStatus(fmt.Errorf("%s: %w; run `pith migrate --in-place` on it first", rel, session.ErrOldVersion))
	}
	snap := session.NewSnapshot(rel, f)

	// The plugins' host API finds this one session: it is not open in
	// the registry, and no other may be reached through it.
	host := *s.hostAPI
	host.Lookup = engine.SingleSession(snap)
	s.mu.Lock()
	plugins := s.pluginSet
	s.mu.Unlock()
	var eng *engine.Session
	disp, err := dispatch.NewDispatcher(dispatch.Options{
		Logger: s.log.Named("hooks"),
		Host:   &host,
		Observe: func(ob hooks.Observation) {
			s.metrics.observeHook(ob)
			eng.ObserveHook(ob)
		},
	}, plugins...)
	if err != nil {
		return toStatus(err)
	}
	eng = engine.New(snap, engine.Options{
		Settings:   s.opts.Settings(cfg),
		Summarizer: s.summ,
		Hooks:      disp,
		Workspaces: s.workspacesOf(rel),
		Logger:     s.log.Named("engine").With("session", rel, "mode", "propose"),
	})

	// Events come from the operation's goroutine; a send that fails (the
	// client went away) is kept, and the call's context ends the work.
	var sendMu sync.Mutex
	var sendErr error
	send := func(e propose.Event) {
		raw, err := json.Marshal(e)
		if err != nil {
			return
		}
		sendMu.Lock()
		defer sendMu.Unlock()
		if sendErr == nil {
			sendErr = stream.Send(&pb.ProposeResponse{Event: raw})
		}
	}
	res, err := propose.Run(ctx, eng, preq, propose.Options{HonourPiCut: cfg.Compaction.HonourPiCut}, send)
	if err != nil {
		return toStatus(err)
	}
	send(res)
	sendMu.Lock()
	defer sendMu.Unlock()
	if sendErr != nil {
		return toStatus(sendErr)
	}
	return nil
}
