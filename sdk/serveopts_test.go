package sdk

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"github.com/pith-dev/pith/internal/wire"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// guardAndTree implements three handler interfaces; a ServeOpts that sets
// two of its fields serves those two events only.
type guardAndTree struct{}

func (guardAndTree) BeforeCompact(context.Context, *BeforeCompactEvent) (*BeforeCompactResult, error) {
	return &BeforeCompactResult{Cancel: true, CancelReason: "typed"}, nil
}

func (guardAndTree) Compacting(context.Context, *CompactingEvent) (*CompactingResult, error) {
	return &CompactingResult{Context: []string{"typed"}}, nil
}

func (guardAndTree) Tree(context.Context, *TreeEvent) error { return nil }

// closeRecorder is a ServeOpts's Close.
type closeRecorder chan struct{}

func (c closeRecorder) Close() error { close(c); return nil }

// TestServePluginTyped: an interface-based and a Funcs-based plugin both
// serve through ServeOpts, over the same server and go-plugin machinery
// Serve uses (in debug mode, attached to as a host would), describing
// exactly the events of the fields set and answering them.
func TestServePluginTyped(t *testing.T) {
	compacted := make(chan string, 1)
	closed := make(closeRecorder)
	funcs := Funcs{
		OnCompact: func(_ context.Context, ev *CompactEvent) error { compacted <- ev.SessionID; return nil },
		OnBeforeTree: func(context.Context, *BeforeTreeEvent) (*BeforeTreeResult, error) {
			return &BeforeTreeResult{Label: "typed"}, nil
		},
	}
	for _, tc := range []struct {
		name  string
		opts  ServeOpts
		want  []EventID
		check func(t *testing.T, ctx context.Context, c pb.HooksClient)
	}{
		{
			name: "interface-based",
			opts: ServeOpts{BeforeCompact: guardAndTree{}, Compacting: guardAndTree{}, Close: closed},
			want: []EventID{EventBeforeCompact, EventCompacting},
			check: func(t *testing.T, ctx context.Context, c pb.HooksClient) {
				res, err := c.BeforeCompact(ctx, &pb.BeforeCompactRequest{SessionId: "s1"})
				if err != nil || res.GetCancel().GetReason() != "typed" {
					t.Fatalf("BeforeCompact = %v, %v; want the cancel", res, err)
				}
				_, err = c.Tree(ctx, &pb.TreeRequest{SessionId: "s1"})
				if status.Code(err) != codes.Unimplemented {
					t.Fatalf("Tree, whose field is unset: %v, want Unimplemented", err)
				}
				if _, err := c.Shutdown(ctx, &pb.ShutdownRequest{}); err != nil {
					t.Fatal(err)
				}
				select {
				case <-closed:
				default:
					t.Fatal("the host's Shutdown did not call ServeOpts.Close")
				}
			},
		},
		{
			name: "Funcs-based",
			// Tree is set to the Funcs too, but it has no OnTree: left out.
			opts: ServeOpts{Compact: funcs, BeforeTree: funcs, Tree: funcs},
			want: []EventID{EventCompact, EventBeforeTree},
			check: func(t *testing.T, ctx context.Context, c pb.HooksClient) {
				if _, err := c.Compact(ctx, &pb.CompactRequest{SessionId: "s2"}); err != nil {
					t.Fatal(err)
				}
				if got := <-compacted; got != "s2" {
					t.Fatalf("Compact saw session %q", got)
				}
				res, err := c.BeforeTree(ctx, &pb.BeforeTreeRequest{SessionId: "s2"})
				if err != nil || res.GetLabel() != "typed" {
					t.Fatalf("BeforeTree = %v, %v; want the label", res, err)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			d := startDebug(t, ctx, tc.opts, config{name: "typed", version: "1.0.0"})
			desc, err := d.hooks.Describe(ctx, &pb.DescribeRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := wire.EventsFromStrings(desc.GetEvents()); !slices.Equal(got, tc.want) {
				t.Fatalf("Describe lists %v, want %v", got, tc.want)
			}
			tc.check(t, ctx, d.hooks)
			d.close(t, ctx)
		})
	}
}

// TestServePluginRefuses: ServePlugin refuses as Serve does, before it
// touches go-plugin, and says a ServeOpts set no handler.
func TestServePluginRefuses(t *testing.T) {
	for name, o := range map[string]ServeOpts{
		"nothing set":            {},
		"a Funcs without OnTree": {Tree: Funcs{}},
	} {
		if err := ServePlugin(o, WithName("x")); !errors.Is(err, ErrNoEvents) {
			t.Errorf("%s: ServePlugin = %v, want ErrNoEvents", name, err)
		}
	}
	t.Setenv(wire.Handshake.MagicCookieKey, "")
	ReturnWhenRunByHand(t)
	if err := ServePlugin(ServeOpts{Compact: compactOnlyHandler{}}); !errors.Is(err, ErrNotLaunchedByHost) {
		t.Errorf("ServePlugin outside the host = %v, want ErrNotLaunchedByHost", err)
	}
}
