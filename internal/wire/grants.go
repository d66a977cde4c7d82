package wire

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"google.golang.org/grpc/metadata"
)

// Grants are the host-API capabilities of one plugin's calls in flight. A
// call to the plugin carries a fresh random token in its gRPC metadata
// (CapabilityKey); the SDK sends it back with each host-API call made
// while serving it; the host-API server honours only tokens of calls still
// running, each scoped to its call's session. A plugin serving a call for
// session A therefore cannot read session B, nor anything once the call
// has returned. pluginhost grants for its subprocesses, the SDK's
// in-process connection for handlers in the calling process.
type Grants struct {
	mu sync.Mutex
	m  map[string]*dispatch.ScopedHost
}

// Grant issues a capability over host for scope and returns the context to
// make the plugin call with, and the revoke to call when it returns.
func (g *Grants) Grant(ctx context.Context, host hooks.HostAPI, scope dispatch.Scope) (context.Context, func()) {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand's documented promise)
	token := hex.EncodeToString(b[:])
	scoped := dispatch.NewScopedHost(host, scope)
	g.mu.Lock()
	if g.m == nil {
		g.m = map[string]*dispatch.ScopedHost{}
	}
	g.m[token] = scoped
	g.mu.Unlock()
	return metadata.AppendToOutgoingContext(ctx, CapabilityKey, token), func() {
		scoped.Revoke()
		g.mu.Lock()
		delete(g.m, token)
		g.mu.Unlock()
	}
}

// Lookup returns the live capability a call presents in its incoming
// metadata, if any.
func (g *Grants) Lookup(ctx context.Context) (*dispatch.ScopedHost, bool) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(CapabilityKey)
	if len(vals) != 1 {
		return nil, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	h, ok := g.m[vals[0]]
	return h, ok
}
