package sdktest_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// probeDir holds the probe once a test has asked for it; TestMain removes
// it.
var probeDir string

// probeBinary builds sdk/sdktest/internal/probe once for this package's
// tests.
var probeBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "sdktest-probe-")
	if err != nil {
		return "", err
	}
	probeDir = dir
	return sdktest.BuildTo(dir, "github.com/pith-dev/pith/sdk/sdktest/internal/probe")
})

func probe(t *testing.T) string {
	t.Helper()
	bin, err := probeBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if probeDir != "" {
		os.RemoveAll(probeDir)
	}
	os.Exit(code)
}

// fatalRecorder is a testing.TB whose Fatalf ends only the goroutine it
// was called on and keeps the message, to see what a harness refuses.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// refusal runs start with a fatalRecorder and returns its Fatalf message.
func refusal(t *testing.T, start func(testing.TB)) string {
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		start(rec)
	}()
	<-done
	return rec.msg
}

func summaryOf(t *testing.T, h *sdktest.Harness, instructions string) string {
	t.Helper()
	res, err := h.BeforeCompact(context.Background(), &hooks.BeforeCompactEvent{CustomInstructions: instructions})
	if err != nil || res == nil || res.Compaction == nil {
		t.Fatalf("%q: %+v, %v", instructions, res, err)
	}
	return res.Compaction.Summary
}

func TestWithSHA256(t *testing.T) {
	bin := probe(t)
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	h := sdktest.Subprocess(t, bin, sdktest.WithSHA256(hex.EncodeToString(sum[:])))
	if got := summaryOf(t, h, ""); got != "ok" {
		t.Fatalf("summary %q", got)
	}
	sum[0] ^= 1
	msg := refusal(t, func(tb testing.TB) { sdktest.Subprocess(tb, bin, sdktest.WithSHA256(hex.EncodeToString(sum[:]))) })
	if !strings.Contains(msg, "sha256") || !strings.Contains(msg, "not started") {
		t.Fatalf("a wrong checksum: %q, want the start refused", msg)
	}
}

func TestWithInheritEnv(t *testing.T) {
	t.Setenv("PITH_SDKTEST_PASSED", "yes")
	t.Setenv("PITH_SDKTEST_WITHHELD", "secret")
	h := sdktest.Subprocess(t, probe(t), sdktest.WithInheritEnv("PITH_SDKTEST_PASSED"))
	if got := summaryOf(t, h, "env:PITH_SDKTEST_PASSED"); got != "PITH_SDKTEST_PASSED=yes" {
		t.Errorf("inherited: %q", got)
	}
	if got := summaryOf(t, h, "env:PITH_SDKTEST_WITHHELD"); got != "PITH_SDKTEST_WITHHELD=" {
		t.Errorf("not listed, yet passed on: %q", got)
	}
}

// TestWithInfoLimits: the limits of WithInfo reach the host in both modes.
func TestWithInfoLimits(t *testing.T) {
	info := hooks.PluginInfo{Name: "probe", Limits: hooks.Limits{SummaryBytes: 1}}
	for mode, h := range map[string]*sdktest.Harness{
		"in-process": sdktest.InProcess(t, hooks.Funcs{OnBeforeCompact: func(context.Context, *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
			return &hooks.BeforeCompactResult{Compaction: &hooks.Compaction{Summary: "ok", FirstKeptEntryID: "e1"}}, nil
		}}, sdktest.WithInfo(info)),
		"subprocess": sdktest.Subprocess(t, probe(t), sdktest.WithInfo(info)),
	} {
		out, err := h.Dispatcher.BeforeCompact(context.Background(), &hooks.BeforeCompactEvent{}, hooks.CompactionLimits{})
		if err != nil || out.Compaction != nil {
			t.Errorf("%s: %+v, %v; want the 2-byte summary refused under a 1-byte limit", mode, out, err)
		}
	}
}

// TestWithEnv: the variables reach the subprocess. (It replaces the
// test of WithSpec, which handed out the host's internal spec type and is
// gone; WithEnv, WithArgs, WithInheritEnv, WithSHA256 and WithInfo cover
// what it was used for.)
func TestWithEnv(t *testing.T) {
	h := sdktest.Subprocess(t, probe(t), sdktest.WithEnv(map[string]string{"PITH_SDKTEST_SPEC": "edited"}))
	if got := summaryOf(t, h, "env:PITH_SDKTEST_SPEC"); got != "PITH_SDKTEST_SPEC=edited" {
		t.Fatalf("summary %q", got)
	}
}

// TestWithSupervisorOptions: the options reach the host's supervisor; a
// start timeout too short for any process fails the start.
func TestWithSupervisorOptions(t *testing.T) {
	bin := probe(t)
	msg := refusal(t, func(tb testing.TB) {
		sdktest.Subprocess(tb, bin, sdktest.WithSupervisorOptions(sdktest.SupervisorOptions{StartTimeout: time.Nanosecond}))
	})
	if msg == "" {
		t.Fatal("a 1 ns start timeout: the plugin started")
	}
}
