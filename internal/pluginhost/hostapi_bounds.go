package pluginhost

import (
	"context"
	"net"

	"github.com/pith-dev/pith/hooks"
	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"github.com/pith-dev/pith/internal/wire"
	"golang.org/x/net/netutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

// What a plugin makes the host hold through its host API is bounded here,
// at the transport, before gRPC buffers a byte of a request or keeps an
// answer for it:
//
//   - A call's request is read only once the call is admitted (admit, run
//     as soon as its headers arrive): it must present the capability of a
//     plugin call still running, and be one of that call's
//     limits.hostCallsInFlight. Requests are at most maxHostRequest bytes.
//     So requests held are at most hostCallsInFlight × maxHostRequest per
//     plugin call in progress, and nothing with none in progress.
//   - A host call runs under its plugin call's capability (dispatch.ScopedHost
//     .Admit): when the plugin call ends, its host calls still running —
//     or still reading their requests — are cancelled.
//   - An answer stays in the host's memory until the plugin reads it,
//     after the call counted as finished. Each connection counts the
//     bytes of its answers gRPC still holds (connAnswers); while they are
//     answerBudget (limits.hostCallsInFlight × limits.pathEntriesBytes) or
//     more, its calls are refused from their headers. A ReadEntries answer
//     is at most limits.pathEntriesBytes (at least 1 MiB: readBudget; or
//     its one entry),
//     the others are small. So unread answers are at most hostAPIConns ×
//     (answerBudget + the answers of the calls admitted at once), and a
//     plugin leaving them unread blocks only its own later calls.
//
// hostAPIConns bounds the connections a plugin instance may hold to its
// host API at once. The SDK keeps one (and dials again once it failed);
// the second is room for a new one while a failed one is torn down.
// Further connections wait in the listener's backlog, costing the host
// nothing, until one closes.
const hostAPIConns = 2

// hostAPIStreams is the most calls a connection carries at once. A plugin
// serving many sessions shares its one connection among all its calls in
// progress, so it is far above what one plugin call may run
// (limits.hostCallsInFlight, counted in admit): at 16, 100 plugin calls
// each making its host calls one after the other took 40% longer
// (BenchmarkHostAPIConcurrent100). What a stream costs beyond its request
// and answer, bounded above, is a few KiB.
const hostAPIStreams = 256

// hostAPIHeaderBytes bounds a call's headers (gRPC's default is 16 MiB),
// which an admitted call keeps as long as it runs: a host-API call's are
// gRPC's own, the capability token and a deadline, well under 1 KiB.
const hostAPIHeaderBytes = 64 << 10

// requestSlack is the room for the envelope of a request (field tags,
// lengths, a session id, a log line's fields) beyond the bytes its limit
// counts.
const requestSlack = 64 << 10

// maxHostRequest is the largest request a plugin within its limits sends:
// a completion's prompts (completePromptBytes) or a token estimate's
// messages (estimateBytes), with their envelope. gRPC refuses a longer one
// from its length prefix, before reading it.
func maxHostRequest(l hooks.Limits) int {
	return min(max(l.CompletePromptBytes, l.EstimateBytes)+requestSlack, wire.MaxMessageSize)
}

// readBudget is the room for entries in one ReadEntries answer: the
// plugin's limits.pathEntriesBytes (what the host sends it of a path with
// an event), but at least minReadBudget, within the wire's maximum less a
// margin for the envelope.
func readBudget(l hooks.Limits) int {
	return min(max(l.PathEntriesBytes, minReadBudget), wire.MaxMessageSize-requestSlack)
}

// minReadBudget keeps pages large where pathEntriesBytes is set small to
// cut what events carry (a few KiB): a plugin paging a long path then
// reads it in pages of about an entry each, a round trip per entry.
const minReadBudget = 1 << 20

// serverOptions are the host API server's options for the plugin's limits:
// the wire's, with the bounds above in place of its 256 MiB requests and
// unbounded streams.
func (s *hostAPIServer) serverOptions() []grpc.ServerOption {
	return append(wire.ServerOptions(),
		grpc.MaxRecvMsgSize(maxHostRequest(s.limits)),
		grpc.MaxConcurrentStreams(hostAPIStreams),
		grpc.MaxHeaderListSize(hostAPIHeaderBytes),
		grpc.InTapHandle(s.admit),
		grpc.StatsHandler(connTagger{}),
		grpc.UnaryInterceptor(lendAnswers),
	)
}

// limitConns bounds the connections ln hands the server to hostAPIConns.
func limitConns(ln net.Listener) net.Listener { return netutil.LimitListener(ln, hostAPIConns) }

// admit runs when a call's headers arrive, before its request is read
// (gRPC calls it under its connection's lock: it only looks up a map and
// counts). A call with no live capability, to no method of the host API,
// or past its plugin call's hostCallsInFlight is refused there; an
// admitted call is read and served under its capability (ScopedHost
// .Admit). Log calls are admitted the same way: a Log request can be as
// large as any other (maxHostRequest), so uncounted, a plugin could keep
// any number of them half-sent, past its call's end.
func (s *hostAPIServer) admit(ctx context.Context, info *tap.Info) (context.Context, error) {
	switch info.FullMethodName {
	case pb.HostAPI_ReadEntries_FullMethodName, pb.HostAPI_EstimateTokens_FullMethodName, pb.HostAPI_Complete_FullMethodName, pb.HostAPI_Log_FullMethodName:
	default:
		return nil, status.Errorf(codes.Unimplemented, "the host API has no method %s", info.FullMethodName)
	}
	if s.host == nil && info.FullMethodName != pb.HostAPI_Log_FullMethodName {
		return nil, errNoHostAPI
	}
	h, ok := s.grants.Lookup(ctx)
	if !ok {
		return nil, errNoGrant
	}
	if c := answersOf(ctx); c != nil && c.Admit(answerBudget(s.limits)) != nil {
		// The connection's own limit (internal/admission): the
		// plugin reads its answers, and its calls pass again.
		return nil, errUnread
	}
	ctx, err := h.Admit(ctx)
	if err != nil {
		return nil, hostErr(err)
	}
	return ctx, nil
}

var (
	errUnread    = status.Error(codes.ResourceExhausted, "this connection has too many host API answers left unread (limits.hostCallsInFlight × limits.pathEntriesBytes bytes); read them first")
	errNoGrant   = status.Error(codes.PermissionDenied, "no plugin call in progress grants this host API call")
	errNoHostAPI = status.Error(codes.Unavailable, "this host offers no host API")
)
