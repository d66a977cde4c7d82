package pluginhost

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/wire"
	"google.golang.org/grpc/metadata"
)

// grants are the host-API capabilities of one plugin's calls in flight. A
// call to the plugin carries a fresh random token in its gRPC metadata; the
// SDK sends it back with each host-API call made while serving it; the
// host-API server honours only tokens of calls still running, each scoped
// to its call's session. A plugin serving a call for session A therefore
// cannot read session B, nor anything once the call has returned.
type grants struct {
	mu sync.Mutex
	m  map[string]*hooks.ScopedHost
}

// grant issues a capability over host for scope and returns the context to
// make the plugin call with, and the revoke to call when it returns.
func (g *grants) grant(ctx context.Context, host hooks.HostAPI, scope hooks.Scope) (context.Context, func()) {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand's documented promise)
	token := hex.EncodeToString(b[:])
	scoped := hooks.NewScopedHost(host, scope)
	g.mu.Lock()
	if g.m == nil {
		g.m = map[string]*hooks.ScopedHost{}
	}
	g.m[token] = scoped
	g.mu.Unlock()
	return metadata.AppendToOutgoingContext(ctx, wire.CapabilityKey, token), func() {
		scoped.Revoke()
		g.mu.Lock()
		delete(g.m, token)
		g.mu.Unlock()
	}
}

// lookup returns the live capability a host-API call presents, if any.
func (g *grants) lookup(ctx context.Context) (*hooks.ScopedHost, bool) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(wire.CapabilityKey)
	if len(vals) != 1 {
		return nil, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	h, ok := g.m[vals[0]]
	return h, ok
}
