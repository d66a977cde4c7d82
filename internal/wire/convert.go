package wire

import (
	"encoding/json"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
)

func rawsToBytes(in []json.RawMessage) [][]byte {
	if len(in) == 0 {
		return nil
	}
	out := make([][]byte, len(in))
	for i, m := range in {
		out[i] = m
	}
	return out
}

func bytesToRaws(in [][]byte) []json.RawMessage {
	if len(in) == 0 {
		return nil
	}
	out := make([]json.RawMessage, len(in))
	for i, b := range in {
		out[i] = b
	}
	return out
}

func raw(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return b
}

// ReasonToProto maps a compaction reason.
func ReasonToProto(r hooks.Reason) pb.Reason {
	switch r {
	case hooks.ReasonManual:
		return pb.Reason_REASON_MANUAL
	case hooks.ReasonThreshold:
		return pb.Reason_REASON_THRESHOLD
	case hooks.ReasonOverflow:
		return pb.Reason_REASON_OVERFLOW
	}
	return pb.Reason_REASON_UNSPECIFIED
}

// ReasonFromProto maps a compaction reason; unknown values become "".
func ReasonFromProto(r pb.Reason) hooks.Reason {
	switch r {
	case pb.Reason_REASON_MANUAL:
		return hooks.ReasonManual
	case pb.Reason_REASON_THRESHOLD:
		return hooks.ReasonThreshold
	case pb.Reason_REASON_OVERFLOW:
		return hooks.ReasonOverflow
	}
	return ""
}

// BeforeCompactEventToProto converts the session_before_compact payload.
func BeforeCompactEventToProto(ev *hooks.BeforeCompactEvent) *pb.BeforeCompactRequest {
	p := ev.Preparation
	req := &pb.BeforeCompactRequest{
		SessionId: ev.SessionID,
		Preparation: &pb.Preparation{
			FirstKeptEntryId:    p.FirstKeptEntryID,
			IsSplitTurn:         p.IsSplitTurn,
			TokensBefore:        int64(p.TokensBefore),
			MessagesToSummarize: rawsToBytes(p.MessagesToSummarize),
			TurnPrefixMessages:  rawsToBytes(p.TurnPrefixMessages),
			PreviousSummary:     p.PreviousSummary,
			ReadFiles:           p.ReadFiles,
			ModifiedFiles:       p.ModifiedFiles,
			KeepRecentTokens:    int64(p.KeepRecentTokens),
			ReserveTokens:       int64(p.ReserveTokens),
			RangeStart:          int64(p.RangeStart),
			MessagesTruncated:   p.MessagesTruncated,
			MessagesTotal:       int64(p.MessagesTotal),
			TurnPrefixTotal:     int64(p.TurnPrefixTotal),
		},
		PathEntries:        rawsToBytes(ev.PathEntries),
		CustomInstructions: ev.CustomInstructions,
		Reason:             ReasonToProto(ev.Reason),
		WillRetry:          ev.WillRetry,
		LeafId:             ev.LeafID,
		PathLength:         int64(ev.PathLength),
		PathTruncated:      ev.PathTruncated,
		LabelsTruncated:    ev.LabelsTruncated,
	}
	for _, l := range ev.Labels {
		req.Labels = append(req.Labels, &pb.Label{EntryId: l.EntryID, Label: l.Label})
	}
	return req
}

// BeforeCompactEventFromProto converts the session_before_compact payload.
func BeforeCompactEventFromProto(req *pb.BeforeCompactRequest) *hooks.BeforeCompactEvent {
	p := req.GetPreparation()
	ev := &hooks.BeforeCompactEvent{
		SessionID: req.GetSessionId(),
		Preparation: hooks.Preparation{
			FirstKeptEntryID:    p.GetFirstKeptEntryId(),
			IsSplitTurn:         p.GetIsSplitTurn(),
			TokensBefore:        int(p.GetTokensBefore()),
			MessagesToSummarize: bytesToRaws(p.GetMessagesToSummarize()),
			TurnPrefixMessages:  bytesToRaws(p.GetTurnPrefixMessages()),
			PreviousSummary:     p.GetPreviousSummary(),
			ReadFiles:           p.GetReadFiles(),
			ModifiedFiles:       p.GetModifiedFiles(),
			KeepRecentTokens:    int(p.GetKeepRecentTokens()),
			ReserveTokens:       int(p.GetReserveTokens()),
			RangeStart:          int(p.GetRangeStart()),
			MessagesTruncated:   p.GetMessagesTruncated(),
			MessagesTotal:       int(p.GetMessagesTotal()),
			TurnPrefixTotal:     int(p.GetTurnPrefixTotal()),
		},
		PathEntries:        bytesToRaws(req.GetPathEntries()),
		CustomInstructions: req.GetCustomInstructions(),
		Reason:             ReasonFromProto(req.GetReason()),
		WillRetry:          req.GetWillRetry(),
		LeafID:             req.GetLeafId(),
		PathLength:         int(req.GetPathLength()),
		PathTruncated:      req.GetPathTruncated(),
		LabelsTruncated:    req.GetLabelsTruncated(),
	}
	for _, l := range req.GetLabels() {
		ev.Labels = append(ev.Labels, hooks.Label{EntryID: l.GetEntryId(), Label: l.GetLabel()})
	}
	return ev
}

// BeforeCompactResultToProto converts a session_before_compact answer.
func BeforeCompactResultToProto(r *hooks.BeforeCompactResult) *pb.BeforeCompactResponse {
	resp := &pb.BeforeCompactResponse{}
	switch {
	case r == nil:
	case r.Cancel:
		resp.Result = &pb.BeforeCompactResponse_Cancel{Cancel: &pb.Cancel{Reason: r.CancelReason}}
	case r.Compaction != nil:
		c := r.Compaction
		resp.Result = &pb.BeforeCompactResponse_Compaction{Compaction: &pb.Compaction{
			Summary:          c.Summary,
			ShortSummary:     c.ShortSummary,
			FirstKeptEntryId: c.FirstKeptEntryID,
			TokensBefore:     int64(c.TokensBefore),
			Details:          c.Details,
			PreserveData:     c.PreserveData,
		}}
	}
	return resp
}

// BeforeCompactResultFromProto converts a session_before_compact answer; no
// result becomes nil.
func BeforeCompactResultFromProto(resp *pb.BeforeCompactResponse) *hooks.BeforeCompactResult {
	switch r := resp.GetResult().(type) {
	case *pb.BeforeCompactResponse_Cancel:
		return &hooks.BeforeCompactResult{Cancel: true, CancelReason: r.Cancel.GetReason()}
	case *pb.BeforeCompactResponse_Compaction:
		c := r.Compaction
		return &hooks.BeforeCompactResult{Compaction: &hooks.Compaction{
			Summary:          c.GetSummary(),
			ShortSummary:     c.GetShortSummary(),
			FirstKeptEntryID: c.GetFirstKeptEntryId(),
			TokensBefore:     int(c.GetTokensBefore()),
			Details:          raw(c.GetDetails()),
			PreserveData:     raw(c.GetPreserveData()),
		}}
	}
	return nil
}

// CompactingEventToProto converts the session.compacting payload.
func CompactingEventToProto(ev *hooks.CompactingEvent) *pb.CompactingRequest {
	return &pb.CompactingRequest{
		SessionId:          ev.SessionID,
		Messages:           rawsToBytes(ev.Messages),
		TurnPrefixMessages: rawsToBytes(ev.TurnPrefixMessages),
		Reason:             ReasonToProto(ev.Reason),
		FirstKeptEntryId:   ev.FirstKeptEntryID,
		IsSplitTurn:        ev.IsSplitTurn,
		TokensBefore:       int64(ev.TokensBefore),
		ReadFiles:          ev.ReadFiles,
		ModifiedFiles:      ev.ModifiedFiles,
		Workspace:          ev.Workspace,
	}
}

// CompactingEventFromProto converts the session.compacting payload.
func CompactingEventFromProto(req *pb.CompactingRequest) *hooks.CompactingEvent {
	return &hooks.CompactingEvent{
		SessionID:          req.GetSessionId(),
		Messages:           bytesToRaws(req.GetMessages()),
		TurnPrefixMessages: bytesToRaws(req.GetTurnPrefixMessages()),
		Reason:             ReasonFromProto(req.GetReason()),
		FirstKeptEntryID:   req.GetFirstKeptEntryId(),
		IsSplitTurn:        req.GetIsSplitTurn(),
		TokensBefore:       int(req.GetTokensBefore()),
		ReadFiles:          req.GetReadFiles(),
		ModifiedFiles:      req.GetModifiedFiles(),
		Workspace:          req.GetWorkspace(),
	}
}

// CompactingResultToProto converts a session.compacting answer.
func CompactingResultToProto(r *hooks.CompactingResult) *pb.CompactingResponse {
	if r == nil {
		return &pb.CompactingResponse{}
	}
	out := &pb.CompactingResponse{Context: r.Context, Prompt: r.Prompt, PreserveData: r.PreserveData}
	for _, m := range r.Messages {
		out.Messages = append(out.Messages, &pb.InjectedMessage{Type: m.Type, Content: m.Content, Display: m.Display})
	}
	return out
}

// CompactingResultFromProto converts a session.compacting answer; an empty
// answer becomes nil.
func CompactingResultFromProto(resp *pb.CompactingResponse) *hooks.CompactingResult {
	if len(resp.GetContext()) == 0 && resp.GetPrompt() == "" && len(resp.GetPreserveData()) == 0 && len(resp.GetMessages()) == 0 {
		return nil
	}
	out := &hooks.CompactingResult{Context: resp.GetContext(), Prompt: resp.GetPrompt(), PreserveData: raw(resp.GetPreserveData())}
	for _, m := range resp.GetMessages() {
		out.Messages = append(out.Messages, hooks.InjectedMessage{Type: m.GetType(), Content: m.GetContent(), Display: m.GetDisplay()})
	}
	return out
}

// CompactEventToProto converts the session_compact notification.
func CompactEventToProto(ev *hooks.CompactEvent) *pb.CompactRequest {
	return &pb.CompactRequest{SessionId: ev.SessionID, CompactionEntry: ev.CompactionEntry, FromExtension: ev.FromExtension}
}

// CompactEventFromProto converts the session_compact notification.
func CompactEventFromProto(req *pb.CompactRequest) *hooks.CompactEvent {
	return &hooks.CompactEvent{SessionID: req.GetSessionId(), CompactionEntry: raw(req.GetCompactionEntry()), FromExtension: req.GetFromExtension()}
}

// BeforeTreeEventToProto converts the session_before_tree payload.
func BeforeTreeEventToProto(ev *hooks.BeforeTreeEvent) *pb.BeforeTreeRequest {
	return &pb.BeforeTreeRequest{
		SessionId:          ev.SessionID,
		TargetId:           ev.TargetID,
		OldLeafId:          ev.OldLeafID,
		CommonAncestorId:   ev.CommonAncestorID,
		EntriesToSummarize: rawsToBytes(ev.EntriesToSummarize),
		UserWantsSummary:   ev.UserWantsSummary,
		CustomInstructions: ev.CustomInstructions,
		Label:              ev.Label,
		EntriesTruncated:   ev.EntriesTruncated,
		EntriesTotal:       int64(ev.EntriesTotal),
	}
}

// BeforeTreeEventFromProto converts the session_before_tree payload.
func BeforeTreeEventFromProto(req *pb.BeforeTreeRequest) *hooks.BeforeTreeEvent {
	return &hooks.BeforeTreeEvent{
		SessionID:          req.GetSessionId(),
		TargetID:           req.GetTargetId(),
		OldLeafID:          req.GetOldLeafId(),
		CommonAncestorID:   req.GetCommonAncestorId(),
		EntriesToSummarize: bytesToRaws(req.GetEntriesToSummarize()),
		UserWantsSummary:   req.GetUserWantsSummary(),
		CustomInstructions: req.GetCustomInstructions(),
		Label:              req.GetLabel(),
		EntriesTruncated:   req.GetEntriesTruncated(),
		EntriesTotal:       int(req.GetEntriesTotal()),
	}
}

// BeforeTreeResultToProto converts a session_before_tree answer.
func BeforeTreeResultToProto(r *hooks.BeforeTreeResult) *pb.BeforeTreeResponse {
	if r == nil {
		return &pb.BeforeTreeResponse{}
	}
	resp := &pb.BeforeTreeResponse{
		CustomInstructions:  r.CustomInstructions,
		ReplaceInstructions: r.ReplaceInstructions,
		Label:               r.Label,
	}
	if r.Cancel {
		resp.Cancel = &pb.Cancel{Reason: r.CancelReason}
	}
	if r.Summary != nil {
		resp.Summary = &pb.BranchSummary{Summary: r.Summary.Summary, Details: r.Summary.Details}
	}
	return resp
}

// BeforeTreeResultFromProto converts a session_before_tree answer; an empty
// answer becomes nil.
func BeforeTreeResultFromProto(resp *pb.BeforeTreeResponse) *hooks.BeforeTreeResult {
	r := &hooks.BeforeTreeResult{
		CustomInstructions:  resp.GetCustomInstructions(),
		ReplaceInstructions: resp.GetReplaceInstructions(),
		Label:               resp.GetLabel(),
	}
	if c := resp.GetCancel(); c != nil {
		r.Cancel, r.CancelReason = true, c.GetReason()
	}
	if s := resp.GetSummary(); s != nil {
		r.Summary = &hooks.BranchSummary{Summary: s.GetSummary(), Details: raw(s.GetDetails())}
	}
	if *r == (hooks.BeforeTreeResult{}) {
		return nil
	}
	return r
}

// TreeEventToProto converts the session_tree notification.
func TreeEventToProto(ev *hooks.TreeEvent) *pb.TreeRequest {
	return &pb.TreeRequest{SessionId: ev.SessionID, NewLeafId: ev.NewLeafID, OldLeafId: ev.OldLeafID, SummaryEntry: ev.SummaryEntry, FromExtension: ev.FromExtension}
}

// TreeEventFromProto converts the session_tree notification.
func TreeEventFromProto(req *pb.TreeRequest) *hooks.TreeEvent {
	return &hooks.TreeEvent{SessionID: req.GetSessionId(), NewLeafID: req.GetNewLeafId(), OldLeafID: req.GetOldLeafId(), SummaryEntry: raw(req.GetSummaryEntry()), FromExtension: req.GetFromExtension()}
}

// EventsToStrings converts event ids for Describe.
func EventsToStrings(ids []hooks.EventID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

// EventsFromStrings keeps the known event ids of a Describe answer and
// returns the unknown ones separately (a newer plugin may list more).
func EventsFromStrings(in []string) (known []hooks.EventID, unknown []string) {
	for _, s := range in {
		if id := hooks.EventID(s); id.Valid() {
			known = append(known, id)
		} else {
			unknown = append(unknown, s)
		}
	}
	return known, unknown
}

// LogLevelToProto maps an hclog level.
func LogLevelToProto(l hclog.Level) pb.LogLevel {
	switch l {
	case hclog.Trace:
		return pb.LogLevel_LOG_LEVEL_TRACE
	case hclog.Debug:
		return pb.LogLevel_LOG_LEVEL_DEBUG
	case hclog.Warn:
		return pb.LogLevel_LOG_LEVEL_WARN
	case hclog.Error:
		return pb.LogLevel_LOG_LEVEL_ERROR
	}
	return pb.LogLevel_LOG_LEVEL_INFO
}

// LogLevelFromProto maps a log level; unspecified means info.
func LogLevelFromProto(l pb.LogLevel) hclog.Level {
	switch l {
	case pb.LogLevel_LOG_LEVEL_TRACE:
		return hclog.Trace
	case pb.LogLevel_LOG_LEVEL_DEBUG:
		return hclog.Debug
	case pb.LogLevel_LOG_LEVEL_WARN:
		return hclog.Warn
	case pb.LogLevel_LOG_LEVEL_ERROR:
		return hclog.Error
	}
	return hclog.Info
}
