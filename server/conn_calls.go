package server

import (
	"context"
	"sync"

	"google.golang.org/grpc/stats"
)

// connCalls are the answers of one gRPC connection still holding their
// calls' slots (answerHold), so that the end of the connection gives
// them back. gRPC frees an answer's buffers when it has written them or
// when its stream ends, but not on every path: when a connection fails
// while answers wait for its client's window, its writer exits and what
// it queued is left to the garbage collector — no buffer is "put back",
// and without this their slots were lost for good.
type connCalls struct {
	mu    sync.Mutex
	ended bool
	holds map[*answerHold]struct{}
}

// add follows h until it is given back; false when the connection has
// ended already (h's answer will never be sent).
func (c *connCalls) add(h *answerHold) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return false
	}
	if c.holds == nil {
		c.holds = map[*answerHold]struct{}{}
	}
	c.holds[h] = struct{}{}
	return true
}

// forget stops following h (given back).
func (c *connCalls) forget(h *answerHold) {
	c.mu.Lock()
	delete(c.holds, h)
	c.mu.Unlock()
}

// end gives back the slot of every answer still held: the connection is
// gone, and so is everything queued on it.
func (c *connCalls) end() {
	c.mu.Lock()
	c.ended = true
	holds := c.holds
	c.holds = nil
	c.mu.Unlock()
	for h := range holds {
		h.release()
	}
}

type connCallsKey struct{}

// connCallsOf is the connection of a call's ctx (nil outside a gRPC
// server using connEnds).
func connCallsOf(ctx context.Context) *connCalls {
	c, _ := ctx.Value(connCallsKey{}).(*connCalls)
	return c
}

// connEnds is the gRPC stats.Handler that gives each connection its
// connCalls (TagConn: every call's context derives from the
// connection's) and ends them with the connection (ConnEnd, after gRPC
// closed its transport). It looks at nothing else.
type connEnds struct{}

func (connEnds) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return context.WithValue(ctx, connCallsKey{}, &connCalls{})
}

func (connEnds) HandleConn(ctx context.Context, s stats.ConnStats) {
	if _, ok := s.(*stats.ConnEnd); ok {
		if c := connCallsOf(ctx); c != nil {
			c.end()
		}
	}
}

func (connEnds) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (connEnds) HandleRPC(context.Context, stats.RPCStats) {}
