package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/sdk"
	"github.com/pith-dev/pith/sdk/sdktest"
	"go.uber.org/goleak"
)

// TestInProcessCloseLeavesNothing: an in-process plugin's whole life —
// start, a call granted the host API, a call cut off at its deadline, Close —
// ends every goroutine it started and closes every file it opened.
func TestInProcessCloseLeavesNothing(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	fds := openFiles(t)
	for range 3 {
		ip, err := sdk.StartInProcess(hooks.PluginInfo{Name: "tidy"}, everything{})
		if err != nil {
			t.Fatal(err)
		}
		ctx := hooks.WithHost(context.Background(), &sdktest.FakeHost{})
		if _, err := ip.BeforeCompact(ctx, &sdk.BeforeCompactEvent{Preparation: sdk.Preparation{MessagesToSummarize: []json.RawMessage{json.RawMessage(`{}`)}}}); err != nil {
			t.Fatal(err)
		}
		dctx, cancel := context.WithTimeout(context.Background(), 1)
		if _, err := ip.BeforeCompact(dctx, &sdk.BeforeCompactEvent{CustomInstructions: "deadline"}); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want a deadline", err)
		}
		cancel()
		if err := ip.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := ip.BeforeCompact(context.Background(), &sdk.BeforeCompactEvent{}); err == nil {
			t.Fatal("a call after Close succeeded")
		}
	}
	goleak.VerifyNone(t, ignore)
	// go-plugin's Serve leaves its stdio pipes to their finalizers.
	for i := 0; i < 100 && openFiles(t) > fds; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	if after := openFiles(t); after > fds {
		t.Errorf("%d files open after Close, %d before", after, fds)
	}
}

// openFiles counts the process's open file descriptors, where /proc says.
func openFiles(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(entries)
}

// TestInProcessGrantsAreByCall: concurrent calls for different sessions
// each reach their own session through the host API, and only it.
func TestInProcessGrantsAreByCall(t *testing.T) {
	const n = 32
	host := &sdktest.FakeHost{Sessions: map[string][]json.RawMessage{}}
	for i := range n {
		host.Sessions[fmt.Sprint("s", i)] = []json.RawMessage{json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
	}
	ip, err := sdk.StartInProcess(hooks.PluginInfo{Name: "reader"}, sdk.Funcs{OnBeforeTree: func(ctx context.Context, ev *sdk.BeforeTreeEvent) (*sdk.BeforeTreeResult, error) {
		own, err := sdk.Host(ctx).ReadEntries(ctx, sdk.ReadEntriesRequest{})
		if err != nil {
			return nil, err
		}
		other := "s0"
		if ev.SessionID == other {
			other = "s1"
		}
		if _, err := sdk.Host(ctx).ReadEntries(ctx, sdk.ReadEntriesRequest{SessionID: other}); !errors.Is(err, hooks.ErrPermissionDenied) {
			return nil, fmt.Errorf("read %s while serving %s: %v", other, ev.SessionID, err)
		}
		return &sdk.BeforeTreeResult{Summary: &sdk.BranchSummary{Summary: string(own[0])}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer ip.Close()
	ctx := hooks.WithHost(context.Background(), host)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := ip.BeforeTree(ctx, &sdk.BeforeTreeEvent{SessionID: fmt.Sprint("s", i)})
			if err != nil {
				t.Error(err)
				return
			}
			if want := fmt.Sprintf(`{"n":%d}`, i); res.Summary == nil || res.Summary.Summary != want {
				t.Errorf("session s%d read %+v, want %s", i, res.Summary, want)
			}
		}()
	}
	wg.Wait()
}

// TestInProcessRefusesWhatServeRefuses: a handler value whose methods are
// on the pointer type handles nothing; Serve refuses it, and so does the
// in-process mode, with the same explanation.
func TestInProcessRefusesWhatServeRefuses(t *testing.T) {
	_, err := sdk.StartInProcess(hooks.PluginInfo{}, pointerOnly{})
	if !errors.Is(err, sdk.ErrNoEvents) || err.Error() != sdk.CheckHandler(pointerOnly{}).Error() {
		t.Fatalf("err = %v, want Serve's refusal", err)
	}
	ip, err := sdk.StartInProcess(hooks.PluginInfo{}, &pointerOnly{})
	if err != nil {
		t.Fatal(err)
	}
	_ = ip.Close()
}

// TestInProcessGrantEndsWithTheCall: a handler that keeps its context
// cannot use the host API once its call has returned.
func TestInProcessGrantEndsWithTheCall(t *testing.T) {
	kept := make(chan context.Context, 1)
	ip, err := sdk.StartInProcess(hooks.PluginInfo{Name: "hoarder"}, sdk.Funcs{OnTree: func(ctx context.Context, ev *sdk.TreeEvent) error {
		kept <- ctx
		_, err := sdk.Host(ctx).Complete(ctx, sdk.CompleteRequest{Prompt: "now"})
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer ip.Close()
	host := &sdktest.FakeHost{}
	if err := ip.Tree(hooks.WithHost(context.Background(), host), &sdk.TreeEvent{SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	ctx := <-kept
	_, err = sdk.Host(ctx).Complete(context.Background(), sdk.CompleteRequest{Prompt: "later"})
	if !errors.Is(err, hooks.ErrPermissionDenied) {
		t.Fatalf("a call after the event returned: %v, want permission denied", err)
	}
	if calls := host.Calls(); len(calls) != 1 {
		t.Fatalf("host calls %v, want only the one made during the event", calls)
	}
}
