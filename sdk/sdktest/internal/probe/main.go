// Command probe is a plugin that misbehaves on request, for the tests of
// package sdktest: they run the same handler in-process and as a
// subprocess and check that the host sees the same thing either way. The
// behaviour is chosen by the event's custom instructions.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/pith-dev/pith/internal/wire"
	"github.com/pith-dev/pith/sdk"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type probe struct{}

// BeforeCompact answers according to ev.CustomInstructions.
func (probe) BeforeCompact(ctx context.Context, ev *sdk.BeforeCompactEvent) (*sdk.BeforeCompactResult, error) {
	if name, ok := strings.CutPrefix(ev.CustomInstructions, "env:"); ok {
		return summary(name + "=" + os.Getenv(name))
	}
	switch ev.CustomInstructions {
	case "error":
		return nil, errors.New("probe says no")
	case "status":
		return nil, status.Error(codes.PermissionDenied, "probe denies")
	case "panic":
		panic("probe panics")
	case "wait":
		// A handler that honours its deadline.
		<-ctx.Done()
		return nil, ctx.Err()
	case "oversleep":
		// A handler that ignores its deadline and answers late.
		time.Sleep(2 * time.Second)
		return summary("too late")
	case "deadline":
		d, ok := ctx.Deadline()
		return summary(fmt.Sprintf("deadline set: %v, in the future: %v", ok, time.Until(d) > 0))
	case "huge":
		// One byte over what the wire carries.
		return summary(strings.Repeat("x", wire.MaxMessageSize+1))
	case "host":
		resp, err := sdk.Host(ctx).Complete(ctx, sdk.CompleteRequest{Prompt: "hello"})
		if err != nil {
			return nil, err
		}
		return summary(resp.Text)
	case "other-session":
		_, err := sdk.Host(ctx).ReadEntries(ctx, sdk.ReadEntriesRequest{SessionID: "other"})
		return nil, err
	}
	return summary("ok")
}

func summary(s string) (*sdk.BeforeCompactResult, error) {
	return &sdk.BeforeCompactResult{Compaction: &sdk.Compaction{Summary: s, FirstKeptEntryID: "e1"}}, nil
}

func main() {
	if err := sdk.ServePlugin(sdk.ServeOpts{BeforeCompact: probe{}}, sdk.WithName("probe")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
