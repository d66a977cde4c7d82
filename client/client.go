package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
	"github.com/pith-dev/pith/internal/netaddr"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Errors a caller can branch on with errors.Is.
var (
	ErrNotFound           = errors.New("not found")
	ErrInvalidArgument    = errors.New("invalid argument")
	ErrPermissionDenied   = errors.New("permission denied")
	ErrAlreadyExists      = errors.New("already exists")
	ErrFailedPrecondition = errors.New("failed precondition")
	ErrCancelled          = errors.New("cancelled")
	// ErrAborted: nothing was written, because of another host sharing
	// the session. Either the session moved under the call in a way it
	// cannot follow — another host moved it to another branch, or
	// rewrote it (a prune), since this call's entries were made: read
	// the session (Context) and send them again only if they still
	// apply — or another host holds the session's lease (Compact: it is
	// compacting or pruning the session): send it again later. An append
	// that merely raced another host's append is not aborted: the daemon
	// appends it after that one.
	ErrAborted = errors.New("aborted")
	// ErrUnavailable: the daemon, or the store it shares with other
	// hosts, cannot be reached. A read (Open, Create, Context,
	// LLMContext, Watch) is sent again by the client itself, as a busy
	// refusal is; a write that failed so (Append, AfterTurn, ReportError,
	// Compact, Navigate, Close) may still have been stored: read the
	// session before sending it again.
	ErrUnavailable = errors.New("server unavailable")
	// ErrUnauthenticated: no, an unknown or a revoked credential.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrResourceExhausted: a size or count limit of the daemon; the
	// same call fails the same way again.
	ErrResourceExhausted = errors.New("resource exhausted")
	// ErrBusy: the daemon refused the call because this caller has
	// server.maxCallsInFlight calls running; nothing ran. The client
	// retries such a refusal itself with a bounded back-off (see
	// WithBusyRetries) and returns ErrBusy only when the retries ran out
	// or ctx ended first.
	ErrBusy = errors.New("busy")
)

// maxMessage matches the hooks wire: sessions carry large tool outputs.
const maxMessage = 256 << 20

// Client is a connection to a `pith serve` daemon. It is safe for
// concurrent use.
type Client struct {
	conn        *grpc.ClientConn
	rpc         pb.SessionServiceClient
	busyRetries int
}

// Option configures Dial.
type Option func(*dialOptions)

type dialOptions struct {
	tls   *tls.Config
	token string
	err   error
	// busyRetries: how many times a busy refusal is retried; -1 for the
	// default.
	busyRetries int
}

// defaultBusyRetries is how many times a call the daemon refused as busy
// is retried by default: with the back-off doubling from the daemon's
// hint (50 ms) up to maxBusyWait, about five seconds in all.
const defaultBusyRetries = 7

// WithBusyRetries sets how many times a call that is safe to send again
// is retried — any call the daemon refused as busy (ErrBusy: the
// caller's server.maxCallsInFlight calls are running; nothing ran), and
// a read that found the daemon or its store unavailable (ErrUnavailable)
// — with a back-off that doubles from 50 ms (or the daemon's hint) up
// to 2 s; 0 returns the error at once. The default is 7, about five
// seconds in all. A write that found them unavailable is never sent
// again by the client: it may have been stored.
func WithBusyRetries(n int) Option {
	return func(o *dialOptions) { o.busyRetries = max(n, 0) }
}

// WithTLS speaks TLS with the daemon. c holds the CA pool that signs the
// server certificate (RootCAs) and, for mutual TLS, the client certificate.
func WithTLS(c *tls.Config) Option {
	return func(o *dialOptions) { o.tls = c.Clone() }
}

// WithTLSFiles is WithTLS from PEM files: caFile verifies the server
// ("" for the system pool); certFile and keyFile, when set, are the client
// certificate for mutual TLS.
func WithTLSFiles(caFile, certFile, keyFile string) Option {
	return func(o *dialOptions) {
		c := &tls.Config{MinVersion: tls.VersionTLS12}
		if caFile != "" {
			pem, err := os.ReadFile(caFile)
			if err != nil {
				o.err = fmt.Errorf("CA file: %w", err)
				return
			}
			c.RootCAs = x509.NewCertPool()
			if !c.RootCAs.AppendCertsFromPEM(pem) {
				o.err = fmt.Errorf("CA file %s: no PEM certificate in it", caFile)
				return
			}
		}
		if certFile != "" || keyFile != "" {
			cert, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				o.err = fmt.Errorf("client certificate: %w", err)
				return
			}
			c.Certificates = []tls.Certificate{cert}
		}
		o.tls = c
	}
}

// WithToken sends "authorization: Bearer token" with every call.
func WithToken(token string) Option {
	return func(o *dialOptions) { o.token = token }
}

// Dial connects to addr: host:port, or unix:/path. Without WithTLS the
// connection is not encrypted, which suits loopback and unix sockets only:
// a token is never sent in clear text to any other address. The connection
// is made lazily; the first call reports an unreachable daemon.
func Dial(addr string, opts ...Option) (*Client, error) {
	o := dialOptions{busyRetries: defaultBusyRetries}
	for _, opt := range opts {
		opt(&o)
	}
	if o.err != nil {
		return nil, fmt.Errorf("pith client %s: %w", addr, o.err)
	}
	creds := insecure.NewCredentials()
	if o.tls != nil {
		creds = credentials.NewTLS(o.tls)
	}
	dopts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage)),
		contextCodecOption(),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return retrySafe(ctx, o.busyRetries, reads[method], func() error { return invoke(ctx, method, req, reply, cc, opts...) })
		}),
	}
	if o.token != "" {
		if o.tls == nil && !netaddr.Loopback(addr) {
			return nil, fmt.Errorf("pith client %s: a token is sent only over TLS, or to loopback or a unix socket", addr)
		}
		dopts = append(dopts, grpc.WithPerRPCCredentials(bearerToken{token: o.token, secure: o.tls != nil}))
	}
	conn, err := grpc.NewClient(addr, dopts...)
	if err != nil {
		return nil, fmt.Errorf("pith client %s: %w", addr, err)
	}
	return &Client{conn: conn, rpc: pb.NewSessionServiceClient(conn), busyRetries: o.busyRetries}, nil
}

// bearerToken is a gRPC per-call credential.
type bearerToken struct {
	token  string
	secure bool
}

func (b bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

// RequireTransportSecurity: Dial allowed clear text only to a local address.
func (b bearerToken) RequireTransportSecurity() bool { return b.secure }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Session is an open session on the daemon.
type Session struct {
	c *Client
	// ID is the session header's id; Path is relative to sessions.root.
	ID, Path string
	// Created: Create made the file.
	Created bool
	LeafID  string
	Entries int
}

// Open opens an existing session file, path relative to sessions.root.
func (c *Client) Open(ctx context.Context, path string) (*Session, error) {
	return c.open(ctx, &pb.OpenSessionRequest{Path: path})
}

// Create opens the session file at path, creating it (and its directories)
// with cwd in its header when it does not exist.
func (c *Client) Create(ctx context.Context, path, cwd string) (*Session, error) {
	return c.open(ctx, &pb.OpenSessionRequest{Path: path, Create: true, Cwd: cwd})
}

func (c *Client) open(ctx context.Context, req *pb.OpenSessionRequest) (*Session, error) {
	r, err := c.rpc.OpenSession(ctx, req)
	if err != nil {
		return nil, wrap("open "+req.Path, err)
	}
	return &Session{c: c, ID: r.GetSessionId(), Path: r.GetPath(), Created: r.GetCreated(), LeafID: r.GetLeafId(), Entries: int(r.GetEntryCount())}, nil
}

// AppendMessages appends agent messages (JSON objects with a "role") and
// returns the entries as written.
func (s *Session) AppendMessages(ctx context.Context, msgs ...json.RawMessage) ([]json.RawMessage, error) {
	r, err := s.c.rpc.Append(ctx, &pb.AppendRequest{SessionId: s.ID, Messages: bytesOf(msgs)})
	if err != nil {
		return nil, wrap("append", err)
	}
	return rawsOf(r.GetEntries()), nil
}

// AppendEntries appends entry objects (with a "type"; the server assigns
// id, parentId and timestamp) and returns them as written.
func (s *Session) AppendEntries(ctx context.Context, entries ...json.RawMessage) ([]json.RawMessage, error) {
	r, err := s.c.rpc.Append(ctx, &pb.AppendRequest{SessionId: s.ID, Entries: bytesOf(entries)})
	if err != nil {
		return nil, wrap("append", err)
	}
	return rawsOf(r.GetEntries()), nil
}

// Client is the connection the session was opened on.
func (s *Session) Client() *Client { return s.c }

// Close closes the session on the daemon, which releases its file; the
// Session must not be used afterwards (open it again instead).
func (s *Session) Close(ctx context.Context) error {
	if _, err := s.c.rpc.CloseSession(ctx, &pb.CloseSessionRequest{SessionId: s.ID}); err != nil {
		return wrap("close", err)
	}
	return nil
}

// Context is what the agent sends to its model.
type Context struct {
	Messages               []json.RawMessage
	Tokens                 int
	Provider, ModelID      string
	ThinkingLevel          string
	LeafID                 string
	AutoCompactionDisabled bool
}

// Context returns the live context.
func (s *Session) Context(ctx context.Context) (*Context, error) {
	return s.getContext(ctx, false)
}

// getContext asks for the live context, raw or converted for a model.
func (s *Session) getContext(ctx context.Context, llm bool) (*Context, error) {
	r, err := s.c.rpc.GetContext(ctx, &pb.GetContextRequest{SessionId: s.ID, Llm: llm})
	if err != nil {
		return nil, wrap("context", err)
	}
	return &Context{
		Messages: rawsOf(r.GetMessages()), Tokens: int(r.GetContextTokens()), Provider: r.GetProvider(), ModelID: r.GetModelId(),
		ThinkingLevel: r.GetThinkingLevel(), LeafID: r.GetLeafId(), AutoCompactionDisabled: r.GetAutoCompactionDisabled(),
	}, nil
}

// Compaction is a saved compaction.
type Compaction struct {
	Reason             string
	Entry              json.RawMessage
	EntryID            string
	Summary            string
	ShortSummary       string
	FirstKeptEntryID   string
	TokensBefore       int
	TokensAfter        int
	MessagesSummarized int
	SplitTurn          bool
	FromHook           bool
	Plugin             string
	// Strategy made the summary: summary or explore.
	Strategy string
	// Explore is the explore strategy's figures as JSON (nil for the
	// summary strategy); AutoReadEntryID the entry with the files it put
	// back, "" for none.
	Explore         json.RawMessage
	AutoReadEntryID string
}

// Compact runs a manual compaction; progress, when set, gets the events
// on the way. Cancelling ctx aborts the compaction.
func (s *Session) Compact(ctx context.Context, instructions string, progress func(Event)) (*Compaction, error) {
	var st grpc.ServerStreamingClient[pb.CompactResponse]
	var r *pb.CompactResponse
	// A busy refusal comes as the stream's first answer.
	err := retrySafe(ctx, s.c.busyRetries, false, func() error {
		var err error
		if st, err = s.c.rpc.Compact(ctx, &pb.CompactRequest{SessionId: s.ID, Instructions: instructions}); err != nil {
			return err
		}
		r, err = st.Recv()
		return err
	})
	for ; ; r, err = st.Recv() {
		if err != nil {
			if err == io.EOF {
				err = errors.New("the stream ended without a result")
			}
			return nil, wrap("compact", err)
		}
		if ev := r.GetProgress(); ev != nil && progress != nil {
			progress(eventOf(ev))
		}
		if res := r.GetResult(); res != nil {
			return compactionOf(res), nil
		}
	}
}

// NavigateOptions are the choices of one navigation.
type NavigateOptions struct {
	// Summarize asks for a branch summary; without it or NoSummarize the
	// daemon's branchSummary.enabled decides.
	Summarize          bool
	CustomInstructions string
	Label              string
	// NoSummarize skips the branch summary whatever the daemon's
	// branchSummary.enabled says.
	NoSummarize bool
}

// Navigation is where a navigation left the session.
type Navigation struct {
	OldLeafID, NewLeafID string
	// SummaryEntry is the branch_summary entry written, nil for none.
	SummaryEntry json.RawMessage
	// EditorText is the text of the user message navigated to;
	// HasEditorText tells an empty one from none.
	EditorText    string
	HasEditorText bool
	// NoOp: the target was already the leaf, nothing was written.
	NoOp bool
	// TargetID is the entry navigated to; PositionID where the
	// conversation continues from (its parent for a user message, ""
	// for the start).
	TargetID, PositionID string
	// EntriesSummarized is how many entries the branch left behind had;
	// FromHook: a plugin supplied its summary.
	EntriesSummarized int
	FromHook          bool
}

// Navigate moves the leaf to targetID (docs/behaviour.md §11).
func (s *Session) Navigate(ctx context.Context, targetID string, opts NavigateOptions) (*Navigation, error) {
	r, err := s.c.rpc.Navigate(ctx, &pb.NavigateRequest{SessionId: s.ID, TargetId: targetID, Summarize: opts.Summarize, CustomInstructions: opts.CustomInstructions, Label: opts.Label, NoSummarize: opts.NoSummarize})
	if err != nil {
		return nil, wrap("navigate", err)
	}
	n := &Navigation{OldLeafID: r.GetOldLeafId(), NewLeafID: r.GetNewLeafId(), EditorText: r.GetEditorText(),
		NoOp: r.GetNoOp(), TargetID: r.GetTargetId(), PositionID: r.GetPositionId(), EntriesSummarized: int(r.GetEntriesSummarized()),
		FromHook: r.GetFromHook(), HasEditorText: r.GetHasEditorText()}
	if len(r.GetSummaryEntry()) > 0 {
		n.SummaryEntry = r.GetSummaryEntry()
	}
	return n, nil
}

// Action tells the agent loop what to do after a turn.
type Action int

// Actions.
const (
	ActionNone Action = iota
	// ActionContinue: send Outcome.Prompt as a user message.
	ActionContinue
	// ActionRetry: retry the failed request with the new Context.
	ActionRetry
)

// Outcome is what the engine did with an assistant message.
type Outcome struct {
	Entry      json.RawMessage
	Overflow   bool
	Stale      bool
	Compaction *Compaction
	Action     Action
	Prompt     string
	Skipped    string
	// Err is a failed automatic compaction ("Auto-compaction failed: …",
	// "Context overflow recovery failed: …"); the message was appended.
	Err string
}

// AfterTurn records an assistant message and runs what it calls for.
func (s *Session) AfterTurn(ctx context.Context, msg json.RawMessage) (*Outcome, error) {
	r, err := s.c.rpc.AfterTurn(ctx, &pb.AfterTurnRequest{SessionId: s.ID, Message: msg})
	if err != nil {
		return nil, wrap("after turn", err)
	}
	return outcomeOf(r.GetOutcome()), nil
}

// ReportError hands the engine an assistant error message (overflow
// recovery).
func (s *Session) ReportError(ctx context.Context, msg json.RawMessage) (*Outcome, error) {
	r, err := s.c.rpc.ReportError(ctx, &pb.ReportErrorRequest{SessionId: s.ID, Message: msg})
	if err != nil {
		return nil, wrap("report error", err)
	}
	return outcomeOf(r.GetOutcome()), nil
}

// Event is one notification of a session's engine.
type Event struct {
	// Kind: compaction_start, compaction_end, hook_error,
	// overflow_reported, auto_compaction_disabled, compaction_warning,
	// compaction_progress, pruned, agent_abort, entries_appended (entries
	// added by a call or by another writer of the session, EntryID the
	// last), session_rewritten (another program rewrote the session —
	// pith prune, pith migrate, an editor — so entries read before may
	// have changed: read it again; EntryID the leaf after it); see the
	// SessionService's Event.
	Kind           string
	SessionID      string
	Time           time.Time
	Reason         string
	Aborted        bool
	Cancelled      bool
	WillRetry      bool
	ContinuePrompt string
	Error          string
	Plugin         string
	TokensBefore   int
	TokensAfter    int
	EntryID        string
	// Progress is a compaction_progress event's figures, nil for any
	// other kind.
	Progress *Progress
}

// Progress is one finished turn of the explore strategy's worker: the
// tools it called, and its conversation's estimate against its budget.
type Progress struct {
	Turn, MaxTurns int
	Tools          []string
	Tokens, Max    int
}

// Watcher receives a session's events.
type Watcher struct {
	stream grpc.ServerStreamingClient[pb.WatchEventsResponse]
	cancel context.CancelFunc
}

// Watch subscribes to the session's events. It returns once the
// subscription is in place: every event after that is delivered. Close the
// Watcher when done.
func (s *Session) Watch(ctx context.Context) (*Watcher, error) {
	ctx, cancel := context.WithCancel(ctx)
	var st grpc.ServerStreamingClient[pb.WatchEventsResponse]
	// Setting up a watch is a read: safe to send again.
	err := retrySafe(ctx, s.c.busyRetries, true, func() error {
		var err error
		if st, err = s.c.rpc.WatchEvents(ctx, &pb.WatchEventsRequest{SessionId: s.ID}); err != nil {
			return err
		}
		md, err := st.Header()
		if err != nil || md != nil {
			return err
		}
		// No header: the daemon refused the stream (gRPC hands the
		// refusal to Recv). Before, Watch reported it in place.
		if _, err = st.Recv(); err == io.EOF || err == nil {
			err = errors.New("the stream ended before it was in place")
		}
		return err
	})
	if err != nil {
		cancel()
		return nil, wrap("watch", err)
	}
	return &Watcher{stream: st, cancel: cancel}, nil
}

// Next waits for the next event. It returns io.EOF when the server ended
// the stream (shutdown).
func (w *Watcher) Next() (Event, error) {
	r, err := w.stream.Recv()
	if err != nil {
		if err == io.EOF {
			return Event{}, io.EOF
		}
		return Event{}, wrap("watch", err)
	}
	return eventOf(r.GetEvent()), nil
}

// Close ends the subscription.
func (w *Watcher) Close() { w.cancel() }

// sentinels are the errors a status code matches.
var sentinels = map[codes.Code]error{
	codes.NotFound:           ErrNotFound,
	codes.InvalidArgument:    ErrInvalidArgument,
	codes.PermissionDenied:   ErrPermissionDenied,
	codes.AlreadyExists:      ErrAlreadyExists,
	codes.FailedPrecondition: ErrFailedPrecondition,
	codes.Canceled:           ErrCancelled,
	codes.DeadlineExceeded:   ErrCancelled,
	codes.Aborted:            ErrAborted,
	codes.Unavailable:        ErrUnavailable,
	codes.Unauthenticated:    ErrUnauthenticated,
	codes.ResourceExhausted:  ErrResourceExhausted,
}

// wrap turns a gRPC error into one line that matches a sentinel.
func wrap(op string, err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%s: %w", op, err)
	}
	if _, busy := busyHint(err); busy {
		return fmt.Errorf("%s: %w: %s", op, ErrBusy, st.Message())
	}
	sentinel, ok := sentinels[st.Code()]
	if !ok {
		return fmt.Errorf("%s: %s", op, st.Message())
	}
	// The daemon's message often starts with the kind itself (its own
	// sentinel has the same words): said once.
	msg := strings.TrimPrefix(st.Message(), sentinel.Error()+": ")
	e := &callError{msg: fmt.Sprintf("%s: %s: %s", op, sentinel, msg), kinds: []error{sentinel}}
	if r := reasonOf(st); r != nil {
		e.kinds = append(e.kinds, r)
	}
	return e
}

// maxBusyWait bounds one wait between the retries of a busy refusal.
const maxBusyWait = 2 * time.Second

// reads are the calls that change nothing, so that one that found the
// daemon or its store unavailable is safe to send again: OpenSession
// (with create too — a second create opens the session the first made),
// GetContext. WatchEvents, a stream, is set up through Session.Watch.
var reads = map[string]bool{
	pb.SessionService_OpenSession_FullMethodName: true,
	pb.SessionService_GetContext_FullMethodName:  true,
}

// retrySafe runs call, and again up to retries times while it fails in a
// way that is safe to send again: a busy refusal (busyHint: nothing ran,
// so any call, an append included), and for a read (read set) the
// daemon or its store unavailable. It waits a back-off that starts at
// the daemon's hint (unavailableRetryDelay for an unavailable read), doubles up
// to maxBusyWait and is jittered (callers refused together do not come
// back together). It returns call's last error; ctx ending stops the
// waiting at once. A write that found the store unavailable is never
// sent again: it may have committed before the answer was lost.
func retrySafe(ctx context.Context, retries int, read bool, call func() error) error {
	var wait time.Duration
	for try := 0; ; try++ {
		err := call()
		hint, again := busyHint(err)
		if !again && read && status.Code(err) == codes.Unavailable {
			hint, again = unavailableRetryDelay, true
		}
		if !again || try >= retries {
			return err
		}
		wait = min(max(2*wait, hint, time.Millisecond), maxBusyWait)
		t := time.NewTimer(wait/2 + rand.N(wait/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// unavailableRetryDelay is the first wait before a read that found the daemon
// or its store unavailable is sent again (a busy refusal says its own).
const unavailableRetryDelay = 50 * time.Millisecond

// busyHint reports whether err is the daemon's busy refusal: Unavailable
// with a google.rpc.RetryInfo detail, and its suggested delay. An
// Unavailable without it (the daemon or its store unreachable) is not
// retried: an append may have landed.
func busyHint(err error) (time.Duration, bool) {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable {
		return 0, false
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
}

func bytesOf(r []json.RawMessage) [][]byte {
	out := make([][]byte, len(r))
	for i, x := range r {
		out[i] = x
	}
	return out
}

func rawsOf(b [][]byte) []json.RawMessage {
	out := make([]json.RawMessage, len(b))
	for i, x := range b {
		out[i] = x
	}
	return out
}

func eventOf(e *pb.Event) Event {
	ev := Event{
		Kind: e.GetKind(), SessionID: e.GetSessionId(), Time: time.Unix(0, e.GetTimeUnixNano()), Reason: e.GetReason(),
		Aborted: e.GetAborted(), Cancelled: e.GetCancelled(), WillRetry: e.GetWillRetry(), ContinuePrompt: e.GetContinuePrompt(),
		Error: e.GetError(), Plugin: e.GetPlugin(), TokensBefore: int(e.GetTokensBefore()), TokensAfter: int(e.GetTokensAfter()),
		EntryID: e.GetEntryId(),
	}
	if p := e.GetProgress(); p != nil {
		ev.Progress = &Progress{Turn: int(p.GetTurn()), MaxTurns: int(p.GetMaxTurns()), Tools: p.GetTools(), Tokens: int(p.GetTokens()), Max: int(p.GetMaxTokens())}
	}
	return ev
}

func compactionOf(r *pb.CompactionResult) *Compaction {
	if r == nil {
		return nil
	}
	c := &Compaction{
		Reason: r.GetReason(), Entry: r.GetEntry(), EntryID: r.GetEntryId(), Summary: r.GetSummary(), ShortSummary: r.GetShortSummary(),
		FirstKeptEntryID: r.GetFirstKeptEntryId(), TokensBefore: int(r.GetTokensBefore()), TokensAfter: int(r.GetTokensAfter()),
		MessagesSummarized: int(r.GetMessagesSummarized()), SplitTurn: r.GetSplitTurn(), FromHook: r.GetFromHook(), Plugin: r.GetPlugin(),
		Strategy: r.GetStrategy(), AutoReadEntryID: r.GetAutoReadEntryId(),
	}
	if len(r.GetExplore()) > 0 {
		c.Explore = r.GetExplore()
	}
	return c
}

func outcomeOf(o *pb.TurnOutcome) *Outcome {
	out := &Outcome{Entry: o.GetEntry(), Overflow: o.GetOverflow(), Stale: o.GetStale(), Compaction: compactionOf(o.GetCompaction()), Prompt: o.GetPrompt(), Skipped: o.GetSkipped(), Err: o.GetError()}
	switch o.GetAction() {
	case pb.TurnOutcome_ACTION_CONTINUE:
		out.Action = ActionContinue
	case pb.TurnOutcome_ACTION_RETRY:
		out.Action = ActionRetry
	}
	return out
}

// Propose runs the propose mode (docs/pi.md) on the session file at path
// (relative to sessions.root; it need not be open): operation is compact,
// navigate, notify-compact or notify-tree, request its JSON request.
// Progress and warning events go to progress (nil: dropped) as they
// come; the result event is returned. Each event is one JSON object, as
// `pith propose` prints it. Nothing is written to the session.
func (c *Client) Propose(ctx context.Context, path, operation string, request json.RawMessage, progress func(json.RawMessage)) (json.RawMessage, error) {
	var st grpc.ServerStreamingClient[pb.ProposeResponse]
	var r *pb.ProposeResponse
	err := retrySafe(ctx, c.busyRetries, false, func() error {
		var err error
		if st, err = c.rpc.Propose(ctx, &pb.ProposeRequest{Path: path, Operation: operation, Request: request}); err != nil {
			return err
		}
		r, err = st.Recv()
		return err
	})
	for ; ; r, err = st.Recv() {
		if err != nil {
			if err == io.EOF {
				err = errors.New("the stream ended without a result")
			}
			return nil, wrap("propose "+operation, err)
		}
		ev := json.RawMessage(r.GetEvent())
		var kind struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(ev, &kind); err != nil {
			return nil, wrap("propose "+operation, fmt.Errorf("an event that is not JSON: %w", err))
		}
		if kind.Type == "result" {
			return ev, nil
		}
		if progress != nil {
			progress(ev)
		}
	}
}
