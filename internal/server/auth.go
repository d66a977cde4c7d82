package server

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"google.golang.org/grpc/tap"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/internal/checksum"
	"github.com/pith-dev/pith/viewer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Authentication errors; the service maps both to Unauthenticated, and a
// caller reaching outside its prefix to PermissionDenied.
var (
	ErrUnauthenticated = errors.New("unauthenticated")
	ErrForbidden       = errors.New("outside the sessions this caller may touch")
)

// caller is who made a call, as the interceptor established it.
type caller struct {
	// name is the token's name or the client certificate's subject; ""
	// for an anonymous caller of a daemon that asks for no credentials.
	name string
	// prefix is the part of sessions.root the caller may touch ("": all).
	prefix string
}

type callerKey struct{}

// callerOf is the caller of ctx; a context that did not pass the
// interceptor (in-process use) may touch everything.
func callerOf(ctx context.Context) caller {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c
}

// may reports whether the caller may touch the session at rel (a clean
// name relative to sessions.root).
func (c caller) may(rel string) bool {
	return c.prefix == "" || strings.HasPrefix(rel, c.prefix)
}

// authorize refuses rel when it lies outside the caller's prefix. The
// message names only what the caller sent.
func authorize(ctx context.Context, rel string) error {
	if c := callerOf(ctx); !c.may(rel) {
		return fmt.Errorf("%w: %q (token %q may touch %q only)", ErrForbidden, rel, c.name, c.prefix)
	}
	return nil
}

// authenticate establishes the caller of one call, from the configuration
// in force, so that a token removed by a reload is refused on the very next
// call. The rules:
//   - with server.tokens, a valid "authorization: Bearer <token>" is
//     required, and its prefix scopes the call;
//   - with client certificates required (mutual TLS), a verified chain is
//     required;
//   - a daemon that must authenticate (not on loopback) but has neither
//     left refuses every call rather than fall open.
func (s *Server) authenticate(ctx context.Context) (caller, error) {
	var pr presented
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			pr.certOK, pr.certName = verifiedCert(ti.State)
		}
	}
	md, _ := metadata.FromIncomingContext(ctx)
	pr.authorization = md.Get("authorization")
	return s.check(pr, s.opts.RequireAuth)
}

// presented is what a caller showed: a verified client certificate (and
// its subject), and its authorization header values.
type presented struct {
	certOK        bool
	certName      string
	authorization []string
	// tokenSum is the SHA-256 of a token checked earlier, which a
	// viewer login stands for; nil: the token is in authorization.
	tokenSum []byte
}

func verifiedCert(st tls.ConnectionState) (ok bool, name string) {
	if len(st.VerifiedChains) > 0 && len(st.VerifiedChains[0]) > 0 {
		return true, st.VerifiedChains[0][0].Subject.CommonName
	}
	return false, ""
}

// check applies the rules of authenticate to what a caller presented, for
// every entry point (gRPC calls, the viewer); requireAuth says whether the
// entry point's listener is reachable from elsewhere.
func (s *Server) check(pr presented, requireAuth bool) (caller, error) {
	cfg := s.cfg.Load().Server
	c := caller{name: pr.certName}
	if s.opts.ClientCerts && !pr.certOK {
		return caller{}, fmt.Errorf("%w: a client certificate signed by server.tls.clientCAFile is required", ErrUnauthenticated)
	}
	if len(cfg.Tokens) > 0 {
		sum := pr.tokenSum
		if sum == nil {
			tok, err := bearer(pr.authorization)
			if err != nil {
				return caller{}, err
			}
			s := sha256.Sum256([]byte(tok))
			sum = s[:]
		}
		t, ok := matchSum(cfg.Tokens, sum)
		if !ok {
			return caller{}, fmt.Errorf("%w: unknown or revoked token", ErrUnauthenticated)
		}
		return caller{name: t.Name, prefix: t.Prefix}, nil
	}
	if requireAuth && !pr.certOK {
		return caller{}, fmt.Errorf("%w: this daemon takes no anonymous calls and has no server.tokens configured", ErrUnauthenticated)
	}
	return c, nil
}

// bearer extracts the token of an authorization header.
func bearer(values []string) (string, error) {
	if len(values) == 0 {
		return "", fmt.Errorf("%w: a bearer token is required (authorization: Bearer <token>)", ErrUnauthenticated)
	}
	if len(values) > 1 {
		return "", fmt.Errorf("%w: more than one authorization header", ErrUnauthenticated)
	}
	scheme, tok, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "bearer") || strings.TrimSpace(tok) == "" {
		return "", fmt.Errorf("%w: the authorization header must be \"Bearer <token>\"", ErrUnauthenticated)
	}
	return strings.TrimSpace(tok), nil
}

// matchToken finds the configured token whose hash is the token's (at most
// one: validation refuses a hash listed twice). Every entry is compared in
// constant time, so timing tells nothing about which hash came close.
func matchToken(tokens []config.Token, tok string) (config.Token, bool) {
	sum := sha256.Sum256([]byte(tok))
	return matchSum(tokens, sum[:])
}

// matchSum is matchToken of the token whose SHA-256 is sum.
func matchSum(tokens []config.Token, sum []byte) (config.Token, bool) {
	var found config.Token
	ok := false
	for _, t := range tokens {
		want, err := checksum.Parse(t.SHA256)
		if err != nil {
			continue
		}
		if checksum.Equal(sum, want) && !ok {
			found, ok = t, true
		}
	}
	return found, ok
}

// HashToken is the SHA-256 of a bearer token as server.tokens[].sha256
// holds it.
func HashToken(tok string) string {
	return checksum.Sum([]byte(tok))
}

// exemptFromAuth are the methods anyone who can connect may call: the
// health check says SERVING or not, and server reflection (registered
// only where server.reflection allows it) describes the services, whose
// schema is public; neither says anything of a session.
func exemptFromAuth(method string) bool {
	return strings.HasPrefix(method, "/grpc.health.v1.Health/") ||
		strings.HasPrefix(method, "/grpc.reflection.v1.ServerReflection/") ||
		strings.HasPrefix(method, "/grpc.reflection.v1alpha.ServerReflection/")
}

// A call is authenticated, and takes its caller's slot, when its headers
// arrive — before gRPC reads its request (tapAuth, gRPC's InTapHandle).
// gRPC reads a whole request (up to the receive limit, 17 MiB by default)
// before any interceptor runs: checked there, anyone who could connect
// made the daemon hold a request's worth per stream, on as many streams
// and connections as they liked, by withholding each request's last
// byte (16 streams of 8 MiB with no token: +130 MiB), and a caller with a
// token could pass server.maxCallsInFlight the same way. The interceptors
// take the call over from the tap (claim).

// tapped is a call tapAuth authenticated and gave a slot. The
// interceptor takes it over; when the call ends before that (its request
// never came whole), the end of its stream gives the slot back.
type tapped struct {
	c     caller
	slot  slotKey
	state atomic.Int32 // tapPending, tapClaimed or tapEnded
	stop  func() bool  // stops the give-back at the stream's end
}

const (
	tapPending int32 = iota
	tapClaimed
	tapEnded
)

type tappedKey struct{}

// tapAuth authenticates a call from its headers and takes its slot: the
// caller's slot of its kind (slotFor). The health check, open to anyone,
// takes a call slot of its connection's own (healthCaller): counted under
// the one anonymous caller, as it first was, anyone could hold every such
// slot with health Watch streams and make every probe fail busy (and on a
// daemon without tokens, where every caller is anonymous, every call). A
// refusal ends the call before its request is read.
func (s *Server) tapAuth(ctx context.Context, info *tap.Info) (context.Context, error) {
	var (
		c    caller
		slot slotKey
		err  error
	)
	if exemptFromAuth(info.FullMethodName) {
		c = healthCaller(ctx)
		slot = slotKey{c.name, slotFor(info.FullMethodName)}
		if err = s.takeSlot(slot); err != nil {
			err = toStatus(err)
		}
	} else {
		c, slot, err = s.authorize(ctx, info.FullMethodName)
	}
	if err != nil {
		s.metrics.observeError(info.FullMethodName, err)
		return nil, err
	}
	t := &tapped{c: c, slot: slot}
	ctx = context.WithValue(ctx, tappedKey{}, t)
	t.stop = context.AfterFunc(ctx, func() {
		if t.state.CompareAndSwap(tapPending, tapEnded) {
			s.giveSlot(t.slot)
		}
	})
	return ctx, nil
}

// healthCaller is the caller a health check counts as: its connection
// (a name no token or certificate can have), or the anonymous caller on
// a connection not followed.
func healthCaller(ctx context.Context) caller {
	if conn := connCallsOf(ctx); conn != nil {
		return caller{name: fmt.Sprintf("\x00health %p", conn)}
	}
	return caller{}
}

// claim is the caller of a call and its slot, now the interceptor's to
// give back: taken over from tapAuth, or — on a gRPC server without it
// (one not made with GRPCOptions) — authenticated and taken here.
func (s *Server) claim(ctx context.Context, method string) (caller, slotKey, error) {
	if t, ok := ctx.Value(tappedKey{}).(*tapped); ok {
		if !t.state.CompareAndSwap(tapPending, tapClaimed) {
			return caller{}, slotKey{}, status.Error(codes.Canceled, "the call ended before its request was read")
		}
		t.stop()
		return t.c, t.slot, nil
	}
	if exemptFromAuth(method) {
		return caller{}, slotKey{}, errNoSlot
	}
	return s.authorize(ctx, method)
}

// authorize authenticates a call to method and takes its caller's slot
// of the method's kind; the errors are the call's status.
func (s *Server) authorize(ctx context.Context, method string) (caller, slotKey, error) {
	c, err := s.authenticate(ctx)
	if err != nil {
		s.metrics.authFailures.Inc()
		return caller{}, slotKey{}, status.Error(codes.Unauthenticated, err.Error())
	}
	slot := slotKey{c.name, slotFor(method)}
	if err := s.takeSlot(slot); err != nil {
		return caller{}, slotKey{}, toStatus(err)
	}
	return c, slot, nil
}

// errNoSlot: a health check on a server without tapAuth, which takes no
// slot.
var errNoSlot = errors.New("no slot")

func (s *Server) unaryAuth(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	c, slot, err := s.claim(ctx, info.FullMethod)
	if errors.Is(err, errNoSlot) {
		return h(ctx, req)
	}
	if err != nil {
		return nil, err
	}
	if exemptFromAuth(info.FullMethod) {
		defer s.giveSlot(slot)
		return h(ctx, req)
	}
	held := false
	defer func() {
		// A failed call (or a panic) answers nothing: its slot is free.
		if !held {
			s.giveSlot(slot)
		}
	}()
	resp, err := h(context.WithValue(ctx, callerKey{}, c), req)
	conn := connCallsOf(ctx)
	if err != nil || resp == nil || conn == nil {
		// Nothing to send, or a connection not followed: the slot
		// would be lost with it, were it to end before the answer left.
		return resp, err
	}
	// The answer holds the slot until gRPC has let go of its bytes
	// (answer_hold.go); the codec unwraps it.
	held = true
	return s.holdAnswer(slot, conn, resp), nil
}

func (s *Server) streamAuth(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	// Where callers are identified, so every method is bounded per
	// caller: WatchEvents by server.maxStreams, the rest by
	// server.maxCallsInFlight.
	c, slot, err := s.claim(ss.Context(), info.FullMethod)
	if errors.Is(err, errNoSlot) {
		return h(srv, ss)
	}
	if err != nil {
		return err
	}
	if exemptFromAuth(info.FullMethod) {
		defer s.giveSlot(slot)
		return h(srv, ss)
	}
	cs := &callerStream{ServerStream: ss, ctx: context.WithValue(ss.Context(), callerKey{}, c)}
	conn := connCallsOf(ss.Context())
	if conn == nil {
		// A connection not followed (see unaryAuth).
		defer s.giveSlot(slot)
		return h(srv, cs)
	}
	// As a call's answer, what a stream sent holds its slot until gRPC
	// has let go of it: the messages still queued when the handler
	// returns (a stream's last ones, up to gRPC's 64 KiB per stream
	// beyond the one being written) are held until they leave.
	cs.hold = s.holdAnswer(slot, conn, nil)
	cs.hold.stream = true
	defer cs.hold.endStream() // the handler's count
	return h(srv, cs)
}

// callerStream carries the caller in a stream's context, and sends its
// messages through its hold.
type callerStream struct {
	grpc.ServerStream
	ctx  context.Context
	hold *answerHold // nil: the slot is the interceptor's to give back
}

func (s *callerStream) Context() context.Context { return s.ctx }

// SendMsg sends m held by the stream's slot: the codec encodes it into
// buffers the hold counts. gRPC allows one SendMsg at a time on a
// stream, so the hold carries one message at a time.
func (s *callerStream) SendMsg(m any) error {
	h := s.hold
	if h == nil {
		return s.ServerStream.SendMsg(m)
	}
	h.ref() // the codec's, which it gives up once m is encoded
	h.msg = m
	err := s.ServerStream.SendMsg(h)
	if h.msg != nil {
		// gRPC never reached the codec.
		h.msg = nil
		h.unref()
	}
	return err
}

// LoopbackOnly guards a handler that takes anonymous requests on a
// loopback listener (/metrics there): it answers only to a Host header
// that names this machine by definition (viewer.LoopbackHost, the
// viewer's check too), so a web page that rebinds a name of its own to
// 127.0.0.1 reads nothing.
func LoopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !viewer.LoopbackHost(r.Host) {
			http.Error(w, "this endpoint answers only to an IP address or localhost", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// MetricsAuth guards the /metrics handler with the rules of the gRPC
// calls, for a metrics address that is not loopback. Metrics count every
// tenant's sessions, so a token must be one for all of sessions.root.
func (s *Server) MetricsAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cfg := s.cfg.Load().Server
		certOK := r.TLS != nil && len(r.TLS.VerifiedChains) > 0
		deny := func(msg string) {
			s.metrics.authFailures.Inc()
			w.Header().Set("WWW-Authenticate", `Bearer realm="pith"`)
			http.Error(w, msg, http.StatusUnauthorized)
		}
		if s.opts.ClientCerts && !certOK {
			deny("a client certificate is required")
			return
		}
		if len(cfg.Tokens) > 0 {
			tok, err := bearer(r.Header.Values("Authorization"))
			if err != nil {
				deny(err.Error())
				return
			}
			t, ok := matchToken(cfg.Tokens, tok)
			if !ok {
				deny("unknown or revoked token")
				return
			}
			if t.Prefix != "" {
				http.Error(w, "metrics need a token for all of sessions.root (prefix \"\")", http.StatusForbidden)
				return
			}
		} else if !certOK {
			deny("this endpoint takes no anonymous requests")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hasTenants reports whether cfg gives any token a prefix: then callers
// are confined to parts of sessions.root, and names must lead where they
// say (store/served: Files.checkDirs).
func hasTenants(cfg *config.Config) bool {
	for _, t := range cfg.Server.Tokens {
		if t.Prefix != "" {
			return true
		}
	}
	return false
}
