package summarize

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/summarize/internal/httpfake"
)

const remoteAuthEnv = "PITH_TEST_REMOTE_TOKEN"

// newTestRemote builds a remote summarizer against srv with a fake sleep.
func newTestRemote(t *testing.T, srv *httpfake.Server, mod func(*RemoteOptions)) (summary.Summarizer, *httpfake.SleepRecorder) {
	t.Helper()
	sleeps := &httpfake.SleepRecorder{}
	opts := RemoteOptions{
		URL:        srv.URL() + "/summarize",
		AuthEnv:    remoteAuthEnv,
		AuthHeader: "X-Pith-Token",
		Timeout:    10 * time.Second,
		MaxRetries: 2,
		BaseDelay:  time.Second,
		Sleep:      sleeps.Sleep,
	}
	if mod != nil {
		mod(&opts)
	}
	s, err := NewRemote(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, sleeps
}

func TestRemoteSuccess(t *testing.T) {
	t.Setenv(remoteAuthEnv, testKey)
	srv := httpfake.NewServer(t, httpfake.Reply{Body: `{"summary": "## Goal\nShip it.", "extra": 1}`})
	s, sleeps := newTestRemote(t, srv, nil)
	res, err := s.Summarize(context.Background(), testRequest)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "## Goal\nShip it." || res.FinishReason != summary.FinishStop {
		t.Errorf("result = %+v", res)
	}
	if !strings.HasPrefix(res.Model, "remote:http://127.0.0.1:") {
		t.Errorf("Model = %q", res.Model)
	}
	got := srv.Requests()
	if len(got) != 1 || len(sleeps.Delays()) != 0 {
		t.Fatalf("requests %d, sleeps %v", len(got), sleeps.Delays())
	}
	r := got[0]
	if r.Method != "POST" || r.Path != "/summarize" {
		t.Errorf("request = %s %s", r.Method, r.Path)
	}
	if v := r.Header.Get("X-Pith-Token"); v != testKey {
		t.Errorf("auth header = %q, want the env value", v)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	checkGolden(t, "remote_request.golden.json", r.Body)
}

func TestRemoteNoAuthConfigured(t *testing.T) {
	srv := httpfake.NewServer(t, httpfake.Reply{Body: `{"summary": "s"}`})
	s, _ := newTestRemote(t, srv, func(o *RemoteOptions) { o.AuthEnv, o.AuthHeader = "", "" })
	if _, err := s.Summarize(context.Background(), testRequest); err != nil {
		t.Fatal(err)
	}
	h := srv.Requests()[0].Header
	if h.Get("Authorization") != "" || h.Get("X-Pith-Token") != "" {
		t.Errorf("auth header sent without configuration: %v", h)
	}
}

func TestRemoteDefaultAuthHeader(t *testing.T) {
	t.Setenv(remoteAuthEnv, "Bearer "+testKey)
	srv := httpfake.NewServer(t, httpfake.Reply{Body: `{"summary": "s"}`})
	s, _ := newTestRemote(t, srv, func(o *RemoteOptions) { o.AuthHeader = "" })
	if _, err := s.Summarize(context.Background(), testRequest); err != nil {
		t.Fatal(err)
	}
	if v := srv.Requests()[0].Header.Get("Authorization"); v != "Bearer "+testKey {
		t.Errorf("Authorization = %q", v)
	}
}

// TestRemoteFailures covers the error paths without a fallback: what the
// error says, whether it was retried, and how long the fake backoff was.
func TestRemoteFailures(t *testing.T) {
	tests := []struct {
		name      string
		script    []httpfake.Reply
		timeout   time.Duration
		wantIs    error
		wantText  []string
		wantReqs  int
		wantSleep []time.Duration
	}{
		{
			name:     "400 with body excerpt, not retried",
			script:   []httpfake.Reply{{Status: 400, Body: `{"error": "prompt too large for ` + testKey + `"}`}},
			wantText: []string{"HTTP 400", "prompt too large", "[redacted]"},
			wantReqs: 1,
		},
		{
			name:      "503 retried up to the bound",
			script:    []httpfake.Reply{{Status: 503, Body: "upstream busy"}},
			wantIs:    ErrTransient,
			wantText:  []string{"HTTP 503", "upstream busy", "gave up after 3 attempts"},
			wantReqs:  3,
			wantSleep: []time.Duration{time.Second, 2 * time.Second},
		},
		{
			name:     "malformed JSON",
			script:   []httpfake.Reply{{Body: `{"summary": "unterminated`}},
			wantIs:   ErrBadResponse,
			wantText: []string{"not the expected JSON"},
			wantReqs: 1,
		},
		{
			name:     "not an object",
			script:   []httpfake.Reply{{Body: `["summary"]`}},
			wantIs:   ErrBadResponse,
			wantReqs: 1,
		},
		{
			name:     "missing summary",
			script:   []httpfake.Reply{{Body: `{"result": "text"}`}},
			wantIs:   ErrBadResponse,
			wantText: []string{`no "summary" field`},
			wantReqs: 1,
		},
		{
			name:     "empty summary",
			script:   []httpfake.Reply{{Body: `{"summary": "  \n"}`}},
			wantIs:   ErrEmptySummary,
			wantReqs: 1,
		},
		{
			name:     "null summary",
			script:   []httpfake.Reply{{Body: `{"summary": null}`}},
			wantIs:   ErrBadResponse,
			wantReqs: 1,
		},
		{
			name:      "timeouts retried",
			script:    []httpfake.Reply{{Hang: true}},
			timeout:   200 * time.Millisecond,
			wantIs:    ErrTransient,
			wantReqs:  3,
			wantSleep: []time.Duration{time.Second, 2 * time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(remoteAuthEnv, testKey)
			srv := httpfake.NewServer(t, tt.script...)
			s, sleeps := newTestRemote(t, srv, func(o *RemoteOptions) {
				if tt.timeout > 0 {
					o.Timeout = tt.timeout
				}
			})
			_, err := s.Summarize(context.Background(), testRequest)
			if err == nil {
				t.Fatal("want an error")
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.wantIs)
			}
			line := err.Error()
			if strings.Contains(line, testKey) || strings.Contains(line, "\n") {
				t.Errorf("error text leaks the credential or spans lines: %q", line)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(line, w) {
					t.Errorf("error %q does not mention %q", line, w)
				}
			}
			if n := len(srv.Requests()); n != tt.wantReqs {
				t.Errorf("server got %d requests, want %d", n, tt.wantReqs)
			}
			if got := sleeps.Delays(); !slices.Equal(got, tt.wantSleep) {
				t.Errorf("backoff = %v, want %v", got, tt.wantSleep)
			}
		})
	}
}

func TestRemoteRetryAfter(t *testing.T) {
	tests := []struct {
		name    string
		headers map[string]string
		want    time.Duration
	}{
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"shorter than the backoff", map[string]string{"Retry-After": "0"}, time.Second},
		{"milliseconds", map[string]string{"Retry-After-Ms": "1500"}, 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(remoteAuthEnv, testKey)
			srv := httpfake.NewServer(t,
				httpfake.Reply{Status: 429, Body: "slow down", Headers: tt.headers},
				httpfake.Reply{Body: `{"summary": "ok"}`},
			)
			s, sleeps := newTestRemote(t, srv, nil)
			res, err := s.Summarize(context.Background(), testRequest)
			if err != nil || res.Text != "ok" {
				t.Fatalf("(%+v, %v)", res, err)
			}
			if got := sleeps.Delays(); !slices.Equal(got, []time.Duration{tt.want}) {
				t.Errorf("backoff = %v, want [%v]", got, tt.want)
			}
		})
	}
}

func TestRemoteConnectionRefusedRetried(t *testing.T) {
	t.Setenv(remoteAuthEnv, testKey)
	srv := httpfake.NewServer(t)
	s, sleeps := newTestRemote(t, srv, nil)
	srv.Close()
	_, err := s.Summarize(context.Background(), testRequest)
	if !errors.Is(err, ErrTransient) {
		t.Fatalf("err = %v, want transient", err)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("error leaks the credential: %v", err)
	}
	if n := len(sleeps.Delays()); n != 2 {
		t.Errorf("%d backoff waits, want 2", n)
	}
}

func TestRemoteMissingAuthEnv(t *testing.T) {
	t.Setenv(remoteAuthEnv, "")
	srv := httpfake.NewServer(t, httpfake.Reply{Body: `{"summary": "s"}`})
	s, _ := newTestRemote(t, srv, nil)
	_, err := s.Summarize(context.Background(), testRequest)
	if !errors.Is(err, ErrMissingCredential) || !strings.Contains(err.Error(), remoteAuthEnv) {
		t.Fatalf("err = %v, want ErrMissingCredential naming %s", err, remoteAuthEnv)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("server got %d requests, want none", n)
	}
}

// TestRemoteAbortDuringBackoff uses the real sleep with an hour-long delay:
// cancelling must end the wait at once, and the fallback must not run.
func TestRemoteAbortDuringBackoff(t *testing.T) {
	t.Setenv(remoteAuthEnv, testKey)
	srv := httpfake.NewServer(t, httpfake.Reply{Status: 503, Body: "busy"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sleeping := make(chan struct{})
	var fallbackCalls atomic.Int32
	s, err := NewRemote(RemoteOptions{
		URL:        srv.URL(),
		MaxRetries: 3,
		BaseDelay:  time.Hour,
		MaxBackoff: 10 * time.Hour,
		Sleep: func(ctx context.Context, d time.Duration) error {
			close(sleeping)
			return SleepContext(ctx, d)
		},
		Fallback: summary.Func(func(context.Context, summary.Request) (summary.Result, error) {
			fallbackCalls.Add(1)
			return summary.Result{Text: "local"}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-sleeping
		cancel()
	}()
	_, err = s.Summarize(ctx, testRequest)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := fallbackCalls.Load(); n != 0 {
		t.Errorf("fallback ran %d times after an abort", n)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("server got %d requests, want 1", n)
	}
}

func TestRemoteAbortDuringRequest(t *testing.T) {
	t.Setenv(remoteAuthEnv, testKey)
	srv := httpfake.NewServer(t, httpfake.Reply{Hang: true})
	s, sleeps := newTestRemote(t, srv, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(srv.Requests()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := s.Summarize(ctx, testRequest)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := len(sleeps.Delays()); n != 0 {
		t.Errorf("backoff after an abort: %v", sleeps.Delays())
	}
}

func TestRemoteFallback(t *testing.T) {
	local := summary.Func(func(_ context.Context, req summary.Request) (summary.Result, error) {
		return summary.Result{Text: "local: " + req.Prompt[:14], FinishReason: summary.FinishStop, Model: "builtin"}, nil
	})
	failing := summary.Func(func(context.Context, summary.Request) (summary.Result, error) {
		return summary.Result{}, errors.New("builtin exploded")
	})
	tests := []struct {
		name     string
		authEnv  string // value; "" unsets
		script   []httpfake.Reply
		fallback summary.Summarizer
		wantText string
		wantErr  []string
	}{
		{
			name:     "permanent error",
			authEnv:  testKey,
			script:   []httpfake.Reply{{Status: 400, Body: "bad"}},
			fallback: local,
			wantText: "local: <conversation>",
		},
		{
			name:     "retries exhausted",
			authEnv:  testKey,
			script:   []httpfake.Reply{{Status: 502, Body: "bad gateway"}},
			fallback: local,
			wantText: "local: <conversation>",
		},
		{
			name:     "missing summary",
			authEnv:  testKey,
			script:   []httpfake.Reply{{Body: `{}`}},
			fallback: local,
			wantText: "local: <conversation>",
		},
		{
			name:     "missing credential",
			authEnv:  "",
			script:   []httpfake.Reply{{Body: `{"summary": "remote"}`}},
			fallback: local,
			wantText: "local: <conversation>",
		},
		{
			name:     "remote succeeds: fallback unused",
			authEnv:  testKey,
			script:   []httpfake.Reply{{Body: `{"summary": "remote"}`}},
			fallback: failing,
			wantText: "remote",
		},
		{
			name:     "fallback fails too",
			authEnv:  testKey,
			script:   []httpfake.Reply{{Status: 400, Body: "bad"}},
			fallback: failing,
			wantErr:  []string{"HTTP 400", "fallback failed too", "builtin exploded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(remoteAuthEnv, tt.authEnv)
			srv := httpfake.NewServer(t, tt.script...)
			s, _ := newTestRemote(t, srv, func(o *RemoteOptions) { o.Fallback = tt.fallback })
			res, err := s.Summarize(context.Background(), testRequest)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("want an error, got %+v", res)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != tt.wantText {
				t.Errorf("Text = %q, want %q", res.Text, tt.wantText)
			}
		})
	}
}

func TestRemoteErrorRedactsURLQuery(t *testing.T) {
	srv := httpfake.NewServer(t)
	base := srv.URL()
	srv.Close()
	s, err := NewRemote(RemoteOptions{URL: base + "/s?token=" + testKey, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Summarize(context.Background(), testRequest)
	if err == nil || strings.Contains(err.Error(), testKey) {
		t.Fatalf("err = %v: want an error without the query token", err)
	}
}

func TestRemoteZeroRetriesIsOneAttempt(t *testing.T) {
	t.Setenv(remoteAuthEnv, testKey)
	srv := httpfake.NewServer(t, httpfake.Reply{Status: 503, Body: "busy"})
	s, sleeps := newTestRemote(t, srv, func(o *RemoteOptions) { o.MaxRetries = 0 })
	_, err := s.Summarize(context.Background(), testRequest)
	if !errors.Is(err, ErrTransient) {
		t.Fatalf("err = %v, want the transient 503", err)
	}
	if n := len(srv.Requests()); n != 1 || len(sleeps.Delays()) != 0 {
		t.Errorf("requests %d, sleeps %v; want one attempt and no wait", n, sleeps.Delays())
	}
}

func TestNewRemoteRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts RemoteOptions
	}{
		{"no URL", RemoteOptions{}},
		{"relative URL", RemoteOptions{URL: "/summarize"}},
		{"not http", RemoteOptions{URL: "ftp://host/summarize"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, err := NewRemote(tt.opts); err == nil || s != nil {
				t.Fatalf("got (%v, %v), want an error", s, err)
			}
		})
	}
}
