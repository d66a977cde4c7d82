package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/transcript"
	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// service adapts the Server to the generated SessionService interface; the
// gRPC types stop here.
type service struct {
	pb.UnimplementedSessionServiceServer
	s *Server
}

func (v *service) OpenSession(ctx context.Context, req *pb.OpenSessionRequest) (*pb.OpenSessionResponse, error) {
	o, created, err := v.s.Open(ctx, req.GetPath(), req.GetCreate(), req.GetCwd())
	if err == nil && !created && o.stale() {
		// Open already, and changed since: the answer shows it as it is.
		o, err = v.s.getFresh(ctx, o.id)
	}
	if err != nil {
		return nil, toStatus(err)
	}
	// The name the caller asked for: a file reached by two names is one
	// session, and the other name may be another tenant's.
	resp := &pb.OpenSessionResponse{SessionId: o.id, Path: req.GetPath(), Created: created, EntryCount: int64(len(o.st().Tree().Entries))}
	if leaf := o.st().Leaf(); leaf != nil {
		resp.LeafId = leaf.ID
	}
	return resp, nil
}

func (v *service) Append(ctx context.Context, req *pb.AppendRequest) (*pb.AppendResponse, error) {
	defer v.s.metrics.since("Append", time.Now())
	if len(req.GetMessages()) > 0 && len(req.GetEntries()) > 0 {
		return nil, status.Error(codes.InvalidArgument, "append: give messages or entries, not both")
	}
	msgs := raws(req.GetMessages())
	for i, m := range msgs {
		var err error
		if msgs[i], err = checkMessage(i+1, m); err != nil {
			return nil, toStatus(err)
		}
	}
	o, err := v.s.acquire(ctx, req.GetSessionId())
	if err != nil {
		return nil, toStatus(err)
	}
	defer o.release()
	if err := v.s.checkGrowth(o, byteCount(req.GetMessages())+byteCount(req.GetEntries()), len(req.GetMessages())+len(req.GetEntries())); err != nil {
		return nil, toStatus(err)
	}
	var entries []*session.Entry
	if len(req.GetMessages()) > 0 {
		entries, err = o.engine().AppendMessages(ctx, msgs...)
	} else {
		entries, err = o.appendEntries(ctx, raws(req.GetEntries()))
	}
	if err != nil {
		return nil, toStatus(err)
	}
	v.s.refreshViewer(o.rel) // the page need not wait for the file watch
	if len(entries) > 0 {
		o.announce(EventEntriesAppended, entries[len(entries)-1])
	}
	resp := &pb.AppendResponse{Entries: entryBytes(entries)}
	if leaf := o.st().Leaf(); leaf != nil {
		resp.LeafId = leaf.ID
	}
	return resp, nil
}

func (v *service) GetContext(ctx context.Context, req *pb.GetContextRequest) (*pb.GetContextResponse, error) {
	defer v.s.metrics.since("GetContext", time.Now())
	o, err := v.s.getFresh(ctx, req.GetSessionId())
	if err != nil {
		return nil, toStatus(err)
	}
	eng := o.engine()
	msgs := eng.Messages()
	resp := &pb.GetContextResponse{
		Messages:               make([][]byte, len(msgs)),
		ContextTokens:          int64(eng.ContextTokens()),
		AutoCompactionDisabled: eng.AutoCompactionDisabled(),
	}
	if req.GetLlm() {
		resp.Messages = raws2bytes(transcript.ConvertForLLM(msgs))
	} else {
		for i, m := range msgs {
			resp.Messages[i] = m.Raw
		}
	}
	resp.Provider, resp.ModelId, resp.ThinkingLevel = leafSettings(o.st())
	if leaf := o.st().Leaf(); leaf != nil {
		resp.LeafId = leaf.ID
	}
	return resp, nil
}

func (v *service) Compact(req *pb.CompactRequest, stream grpc.ServerStreamingServer[pb.CompactResponse]) error {
	start := time.Now()
	ctx := stream.Context()
	o, err := v.s.acquire(ctx, req.GetSessionId())
	if err != nil {
		return toStatus(err)
	}
	defer o.release()
	// Progress goes out from a goroutine of its own so that a slow client
	// never holds up the engine. The agent_abort the compaction starts with
	// is for the agent's WatchEvents stream, not news to this caller.
	w, cancel := o.watch(true)
	if w == nil {
		// Cannot happen under the operation lock: eviction takes it.
		return toStatus(errEvicted)
	}
	done := make(chan error, 1)
	stop := make(chan struct{})
	progress := func(ev engine.Event) error {
		if ev.Kind == engine.EventAgentAbort {
			return nil
		}
		return stream.Send(&pb.CompactResponse{Kind: &pb.CompactResponse_Progress{Progress: eventProto(o.id, ev)}})
	}
	go func() {
		for {
			select {
			case ev := <-w.ch:
				if err := progress(*ev); err != nil {
					done <- err
					return
				}
			case <-stop:
				// Drain what the compaction emitted before it returned.
				for {
					select {
					case ev := <-w.ch:
						if err := progress(*ev); err != nil {
							done <- err
							return
						}
					default:
						done <- nil
						return
					}
				}
			}
		}
	}()
	res, err := o.engine().Compact(ctx, req.GetInstructions())
	cancel()
	close(stop)
	if serr := <-done; serr != nil && err == nil {
		err = serr
	}
	v.s.metrics.since("Compact", start)
	if err != nil {
		return toStatus(err)
	}
	return stream.Send(&pb.CompactResponse{Kind: &pb.CompactResponse_Result{Result: resultProto(res)}})
}

func (v *service) Navigate(ctx context.Context, req *pb.NavigateRequest) (*pb.NavigateResponse, error) {
	defer v.s.metrics.since("Navigate", time.Now())
	o, err := v.s.acquire(ctx, req.GetSessionId())
	if err != nil {
		return nil, toStatus(err)
	}
	defer o.release()
	if label := req.GetLabel(); label != "" {
		// The label is written as an entry: the size limits of an
		// append hold for it.
		if err := v.s.checkGrowth(o, len(label), 1); err != nil {
			return nil, toStatus(err)
		}
	}
	bs := v.s.cfg.Load().BranchSummary
	mode := engine.SummarizeDefault // branchSummary.enabled decides
	if req.GetNoSummarize() {
		mode = engine.SummarizeNever
	}
	res, err := o.engine().Navigate(ctx, req.GetTargetId(), engine.NavigateOptions{
		Summarize:          req.GetSummarize(),
		Mode:               mode,
		CustomInstructions: req.GetCustomInstructions(),
		Label:              req.GetLabel(),
		ContextWindow:      bs.ContextWindow,
		ReserveTokens:      bs.ReserveTokens,
	})
	if err != nil {
		return nil, toStatus(err)
	}
	v.s.refreshViewer(o.rel) // a navigation has no engine event of its own
	resp := &pb.NavigateResponse{OldLeafId: res.OldLeafID, NewLeafId: res.NewLeafID, EditorText: res.EditorText,
		NoOp: res.NoOp, TargetId: res.TargetID, PositionId: res.PositionID, EntriesSummarized: int64(res.EntriesSummarized),
		FromHook: res.FromHook, HasEditorText: res.HasEditorText}
	if res.SummaryEntry != nil {
		resp.SummaryEntry = res.SummaryEntry.Raw
	}
	return resp, nil
}

func (v *service) AfterTurn(ctx context.Context, req *pb.AfterTurnRequest) (*pb.AfterTurnResponse, error) {
	defer v.s.metrics.since("AfterTurn", time.Now())
	out, err := v.turn(ctx, req.GetSessionId(), req.GetMessage(), (*engine.Session).AfterTurn)
	if err != nil {
		return nil, err
	}
	return &pb.AfterTurnResponse{Outcome: out}, nil
}

func (v *service) ReportError(ctx context.Context, req *pb.ReportErrorRequest) (*pb.ReportErrorResponse, error) {
	defer v.s.metrics.since("ReportError", time.Now())
	out, err := v.turn(ctx, req.GetSessionId(), req.GetMessage(), (*engine.Session).HandleAssistantError)
	if err != nil {
		return nil, err
	}
	return &pb.ReportErrorResponse{Outcome: out}, nil
}

func (v *service) turn(ctx context.Context, id string, msg []byte, fn func(*engine.Session, context.Context, json.RawMessage) (*engine.Outcome, error)) (*pb.TurnOutcome, error) {
	msg, err := checkMessage(0, msg)
	if err != nil {
		return nil, toStatus(err)
	}
	o, err := v.s.acquire(ctx, id)
	if err != nil {
		return nil, toStatus(err)
	}
	defer o.release()
	if err := v.s.checkGrowth(o, len(msg), 1); err != nil {
		return nil, toStatus(err)
	}
	out, err := fn(o.engine(), ctx, msg)
	v.s.refreshViewer(o.rel)
	if out != nil {
		// The message (a compaction it set off has its own events).
		o.announce(EventEntriesAppended, out.Entry)
	}
	if out == nil {
		if err == nil {
			err = errors.New("the engine returned no outcome")
		}
		return nil, toStatus(err)
	}
	return outcomeProto(out, err), nil
}

func (v *service) WatchEvents(req *pb.WatchEventsRequest, stream grpc.ServerStreamingServer[pb.WatchEventsResponse]) error {
	// Its stream slot (server.maxStreams) was taken with the caller's
	// credentials (streamAuth). Setting it up can read and parse a whole
	// session closed for idleness, as a GetContext does: that holds one of
	// the caller's calls in flight (server.maxCallsInFlight) too, given
	// back before the stream's long wait for events. Without it a caller's
	// streams opened at once on a large session parsed it that many times
	// over, past the bound.
	c := callerOf(stream.Context())
	release, err := v.s.take(c, slotCall)
	if err != nil {
		return toStatus(err)
	}
	defer release() // a panic in the setup (recovered by the interceptor) must give it back too
	o, w, cancel, err := v.s.watch(stream.Context(), req.GetSessionId())
	release()
	if err != nil {
		return toStatus(err)
	}
	defer cancel()
	ctx, stop := v.s.revalidate(stream.Context(), func() error { return v.s.mayStill(stream.Context(), o) })
	defer stop()
	// The header tells the client the subscription is in place, so it can
	// act knowing no later event will be missed.
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	checked := *v.s.applied.Load()
	for {
		select {
		case ev := <-w.ch:
			if ev.Kind == eventsLost {
				// Another host lost events of the session: as for a
				// stream that fell behind, the client watches again
				// and reads the session.
				return status.Error(codes.ResourceExhausted, errWatchOverrun.Error())
			}
			if ev.Kind == sessionRefused {
				return refusedStream(ev) // over server.maxSessionBytes
			}
			// An event that arrives right after a reload is sent only
			// once the caller passed the check again: revalidate runs
			// beside this loop and may not have run yet (an Append right
			// after a revoking reload reached the revoked stream).
			if now := *v.s.applied.Load(); now != checked {
				if err := v.s.mayStill(stream.Context(), o); err != nil {
					return toStatus(err)
				}
				checked = now
			}
			// A caller in by another name of the session (a hard
			// link in its tree) loses it when the name no longer leads
			// to the session's file (reachableBy checks it again).
			if !o.reachableBy(c) {
				return toStatus(fmt.Errorf("%w: session %q: the name it was opened by no longer leads to it", ErrForbidden, o.id))
			}
			if err := stream.Send(&pb.WatchEventsResponse{Event: eventProto(o.id, *ev)}); err != nil {
				return err
			}
		case <-w.overrun:
			return status.Error(codes.ResourceExhausted, errWatchOverrun.Error())
		case <-o.gone:
			select {
			case <-v.s.shutdown:
				return nil
			default:
			}
			return toStatus(fmt.Errorf("%w: %q was closed; open it and watch again", ErrNoSession, o.id))
		case <-v.s.shutdown:
			return nil
		case <-ctx.Done():
			if err := context.Cause(ctx); !errors.Is(err, context.Canceled) {
				return toStatus(err) // no longer allowed
			}
			return nil
		}
	}
}

// CloseSession closes a session: its file, its engine, its event streams'
// subscription. Later calls naming it get NotFound.
func (v *service) CloseSession(ctx context.Context, req *pb.CloseSessionRequest) (*pb.CloseSessionResponse, error) {
	if err := v.s.CloseSession(ctx, req.GetSessionId()); err != nil {
		return nil, toStatus(err)
	}
	return &pb.CloseSessionResponse{}, nil
}

// checkMessage refuses what is not an agent message (strictly: see
// session.CheckClientMessage), so that the errors the engine returns
// afterwards are the server's, not the caller's. It returns the message
// to append.
func checkMessage(n int, m []byte) (json.RawMessage, error) {
	checked, err := session.CheckClientMessage(m)
	if err != nil && n > 0 {
		return nil, fmt.Errorf("message %d: %w", n, err)
	}
	return checked, err
}

func byteCount(b [][]byte) int {
	n := 0
	for _, x := range b {
		n += len(x)
	}
	return n
}

func raws(b [][]byte) []json.RawMessage {
	out := make([]json.RawMessage, len(b))
	for i, x := range b {
		out[i] = x
	}
	return out
}

func raws2bytes(r []json.RawMessage) [][]byte {
	out := make([][]byte, len(r))
	for i, x := range r {
		out[i] = x
	}
	return out
}

func entryBytes(es []*session.Entry) [][]byte {
	out := make([][]byte, len(es))
	for i, e := range es {
		out[i] = e.Raw
	}
	return out
}

func eventProto(sessionID string, ev engine.Event) *pb.Event {
	out := &pb.Event{
		Kind: string(ev.Kind), SessionId: sessionID, TimeUnixNano: ev.Time.UnixNano(), Reason: string(ev.Reason),
		Aborted: ev.Aborted, Cancelled: ev.Cancelled, WillRetry: ev.WillRetry, ContinuePrompt: ev.Continue,
		Error: ev.Error, Plugin: ev.Plugin, TokensBefore: int64(ev.TokensBefore), TokensAfter: int64(ev.TokensAfter),
		EntryId: ev.EntryID,
	}
	if p := ev.Progress; p != nil {
		out.Progress = &pb.ExploreProgress{Turn: int32(p.Turn), MaxTurns: int32(p.MaxTurns), Tools: p.Tools, Tokens: int64(p.Tokens), MaxTokens: int64(p.Max)}
	}
	return out
}

func resultProto(r *engine.Result) *pb.CompactionResult {
	if r == nil {
		return nil
	}
	out := &pb.CompactionResult{
		Reason: string(r.Reason), Summary: r.Summary, ShortSummary: r.ShortSummary, FirstKeptEntryId: r.FirstKeptEntryID,
		TokensBefore: int64(r.TokensBefore), TokensAfter: int64(r.TokensAfter), MessagesSummarized: int64(r.MessagesSummarized),
		SplitTurn: r.SplitTurn, FromHook: r.FromHook, Plugin: r.Plugin, Strategy: r.Strategy,
	}
	if r.Entry != nil {
		out.Entry, out.EntryId = r.Entry.Raw, r.Entry.ID
	}
	if r.Explore != nil {
		out.Explore, _ = json.Marshal(r.Explore) // plain numbers, strings and maps: cannot fail
	}
	if r.AutoReadEntry != nil {
		out.AutoReadEntryId = r.AutoReadEntry.ID
	}
	return out
}

func outcomeProto(o *engine.Outcome, err error) *pb.TurnOutcome {
	out := &pb.TurnOutcome{Overflow: o.Overflow, Stale: o.Stale, Compaction: resultProto(o.Compaction), Prompt: o.Prompt, Skipped: o.Skipped}
	if o.Entry != nil {
		out.Entry = o.Entry.Raw
	}
	switch o.Action {
	case engine.ActionContinue:
		out.Action = pb.TurnOutcome_ACTION_CONTINUE
	case engine.ActionRetry:
		out.Action = pb.TurnOutcome_ACTION_RETRY
	}
	if err != nil {
		out.Error = err.Error()
	}
	return out
}
