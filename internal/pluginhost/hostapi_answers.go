package pluginhost

import (
	"context"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/admission"
	"github.com/pith-dev/pith/internal/wire"
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/stats"
)

// connAnswers counts the bytes of one host-API connection's answers that
// gRPC still holds. A call counts as finished when its handler returns,
// but gRPC keeps the encoded answer until the plugin has read it (HTTP/2
// flow control): a plugin that reads none made the host hold any number
// of them, across its calls. Each answer large enough to be pooled is
// encoded into a buffer lent by its connection's connAnswers (wire.Lent):
// Get counts it in, and Put — gRPC frees the buffer when its last byte is
// written or its call is reset — counts it out. admit refuses new calls
// on a connection holding answerBudget or more.
//
// The count lives with the connection (a gRPC stats handler tags each
// connection with its own): gRPC does not free what it had queued on a
// connection that failed, and a count there dies with it instead of
// standing against the plugin's next connection. The pool is the
// mechanism; the budget is admission's (a connection's own limit).
type connAnswers struct{ admission.Bytes }

func (c *connAnswers) Get(n int) *[]byte {
	b := mem.DefaultBufferPool().Get(n)
	c.Lend(cap(*b))
	return b
}

func (c *connAnswers) Put(b *[]byte) {
	c.Return(cap(*b))
	mem.DefaultBufferPool().Put(b)
}

type connAnswersKey struct{}

// answersOf is the connAnswers of the connection a call came on.
func answersOf(ctx context.Context) *connAnswers {
	c, _ := ctx.Value(connAnswersKey{}).(*connAnswers)
	return c
}

// answerBudget is what a connection may hold of unread answers before its
// calls are refused: what one plugin call may have on its way with all its
// limits.hostCallsInFlight reading pages of limits.pathEntriesBytes. A
// plugin reading its answers never comes near it; one leaving them unread
// is held at that, plus the answers of the calls already admitted.
func answerBudget(l hooks.Limits) int64 {
	return int64(l.HostCallsInFlight) * int64(readBudget(l))
}

// connTagger is the gRPC stats handler that gives each connection its
// connAnswers.
type connTagger struct{}

func (connTagger) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return context.WithValue(ctx, connAnswersKey{}, &connAnswers{})
}
func (connTagger) HandleConn(context.Context, stats.ConnStats)                     {}
func (connTagger) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (connTagger) HandleRPC(context.Context, stats.RPCStats)                       {}

// lendAnswers hands a handler's answer to the codec with its connection's
// connAnswers as the pool of its buffer.
func lendAnswers(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if c := answersOf(ctx); err == nil && c != nil {
		return wire.Lent{Msg: resp, Pool: c}, nil
	}
	return resp, err
}
