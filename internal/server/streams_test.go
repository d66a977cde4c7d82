package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestStreamsBoundedPerCaller: one caller cannot hold more than
// server.maxStreams event streams open — before the bound, 2000
// WatchEvents streams from one client took 373 MB of the daemon's heap in
// a fraction of a second, with nothing to stop the next 50 000. The bound
// is per caller: another token's streams still open, and a slot given
// back (a stream ended) can be taken again. The viewer's live update
// stream counts against the same bound.
func TestStreamsBoundedPerCaller(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.MaxStreams = 3
	cfg.Server.Tokens = []config.Token{
		{Name: "a", SHA256: HashToken("secret-a")},
		{Name: "b", SHA256: HashToken("secret-b")},
	}
	h := startServer(t, cfg)
	v := h.srv.NewViewer(false)
	hs := httptestServer(t, v)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	ca, err := client.Dial(h.addr, client.WithToken("secret-a"))
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	s, err := ca.Create(ctx, "w.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}

	conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	raw := pb.NewSessionServiceClient(conn)
	// watch opens a stream as tok and waits for its answer: the header
	// when the stream is in place, or the refusal.
	watch := func(ctx context.Context, tok string) error {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
		st, err := raw.WatchEvents(ctx, &pb.WatchEventsRequest{SessionId: s.ID})
		if err != nil {
			return err
		}
		if _, err := st.Header(); err != nil {
			return err
		}
		if md, _ := st.Header(); md == nil {
			_, err := st.Recv()
			return err
		}
		return nil
	}
	ends := make([]context.CancelFunc, 0, 3)
	for i := range 3 {
		sctx, end := context.WithCancel(ctx)
		ends = append(ends, end)
		if err := watch(sctx, "secret-a"); err != nil {
			t.Fatalf("stream %d of 3: %v", i+1, err)
		}
	}
	if err := watch(ctx, "secret-a"); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a 4th stream of one caller: %v, want ResourceExhausted", err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+"/s/w.jsonl/api/events", nil)
	req.Header.Set("Authorization", "Bearer secret-a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the viewer's stream past the caller's bound: %d, want 429", resp.StatusCode)
	}
	// Another caller is not held back by the first.
	if err := watch(ctx, "secret-b"); err != nil {
		t.Fatalf("another caller's stream: %v", err)
	}
	// A stream ended gives its slot back (once its handler returned).
	ends[0]()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := watch(ctx, "secret-a")
		if err == nil {
			break
		}
		if status.Code(err) != codes.ResourceExhausted || time.Now().After(deadline) {
			t.Fatalf("after ending a stream: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A reload raising the bound applies to the next stream.
	next := *h.srv.Config()
	next.Server.MaxStreams = 5
	h.srv.ApplyConfig(config.Change{New: &next})
	if err := watch(ctx, "secret-a"); err != nil {
		t.Fatalf("after raising server.maxStreams: %v", err)
	}
	for _, end := range ends {
		end()
	}
}

func httptestServer(t *testing.T, v *Viewer) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(v)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		v.Close()
	})
	return hs
}

// TestRevokedTokenEndsStreams: removing a token from the configuration
// revokes it for the streams it holds open too, not only for its next
// call — before, a WatchEvents stream and the viewer's live stream of a
// revoked token went on delivering the session's events for as long as
// the client kept them. Narrowing a token's prefix away from the session
// ends them as well.
func TestRevokedTokenEndsStreams(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.Tokens = []config.Token{
		{Name: "admin", SHA256: HashToken("secret-admin")},
		{Name: "gone", SHA256: HashToken("secret-gone")},
		{Name: "team", SHA256: HashToken("secret-team"), Prefix: "team-a/"},
	}
	h := startServer(t, cfg)
	hs := httptestServer(t, h.srv.NewViewer(false))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := client.Dial(h.addr, client.WithToken("secret-admin"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	s, err := admin.Create(ctx, "team-a/w.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}

	conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	raw := pb.NewSessionServiceClient(conn)
	watch := func(tok string) pb.SessionService_WatchEventsClient {
		sctx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
		st, err := raw.WatchEvents(sctx, &pb.WatchEventsRequest{SessionId: s.ID})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Header(); err != nil {
			t.Fatal(err)
		}
		return st
	}
	gone, team := watch("secret-gone"), watch("secret-team")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+"/s/team-a/w.jsonl/api/events", nil)
	req.Header.Set("Authorization", "Bearer secret-gone")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("viewer stream: %d", resp.StatusCode)
	}

	// "gone" is revoked; "team" now reaches team-b/ only.
	next := *h.srv.Config()
	next.Server.Tokens = []config.Token{
		{Name: "admin", SHA256: HashToken("secret-admin")},
		{Name: "team", SHA256: HashToken("secret-team"), Prefix: "team-b/"},
	}
	h.srv.ApplyConfig(config.Change{Old: cfg, New: &next})
	// Something happens on the session: a stream still open would get it.
	if _, err := s.AppendMessages(ctx, userMsg("after revocation", 20)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Compact(ctx, "", nil); err != nil {
		t.Logf("compact: %v", err) // the events are what matters
	}
	for name, st := range map[string]pb.SessionService_WatchEventsClient{"revoked": gone, "narrowed": team} {
		ev, err := st.Recv()
		want := codes.Unauthenticated
		if name == "narrowed" {
			want = codes.PermissionDenied
		}
		if status.Code(err) != want {
			t.Errorf("%s token's stream: event %v, error %v; want it ended with %v", name, ev, err, want)
		}
	}
	// The viewer's stream ends: the body reaches its end.
	if _, err := io.Copy(io.Discard, resp.Body); err != nil && ctx.Err() != nil {
		t.Fatalf("the viewer's stream of a revoked token is still open: %v", err)
	}
}
