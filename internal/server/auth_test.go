package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
)

func TestMetricsAuth(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.Tokens = []config.Token{
		{Name: "ops", SHA256: HashToken("ops-token")},
		{Name: "team-a", SHA256: HashToken("a-token"), Prefix: "team-a/"},
	}
	h := startServer(t, cfg)
	handler := h.srv.MetricsAuth(h.srv.MetricsHandler())
	for name, tc := range map[string]struct {
		header string
		want   int
	}{
		"no token":      {"", http.StatusUnauthorized},
		"unknown token": {"Bearer nope", http.StatusUnauthorized},
		"not bearer":    {"Basic b3BzOm9wcw==", http.StatusUnauthorized},
		"tenant token":  {"Bearer a-token", http.StatusForbidden},
		"ops token":     {"Bearer ops-token", http.StatusOK},
	} {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/metrics", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			w := httptest.NewRecorder()
			handler.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.want, w.Body)
			}
		})
	}
}

// TestRequireAuthFailsClosed: a daemon that must authenticate but has no
// token left (a reload removed them all) refuses every call.
func TestRequireAuthFailsClosed(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.Tokens = []config.Token{{Name: "a", SHA256: HashToken("a")}}
	h := startServer(t, cfg)
	h.srv.opts.RequireAuth = true
	next := cfg.Clone()
	next.Server.Tokens = nil
	h.srv.cfg.Store(next)
	if _, err := h.client.Create(context.Background(), "s.jsonl", "/w"); !errors.Is(err, client.ErrUnauthenticated) {
		t.Fatalf("anonymous call with no token configured: %v, want unauthenticated", err)
	}
}

func TestMatchToken(t *testing.T) {
	tokens := []config.Token{{Name: "a", SHA256: HashToken("x")}, {Name: "bad", SHA256: "zz"}, {Name: "b", SHA256: HashToken("y")}}
	if tk, ok := matchToken(tokens, "y"); !ok || tk.Name != "b" {
		t.Fatalf("got %v %v", tk, ok)
	}
	if _, ok := matchToken(tokens, "z"); ok {
		t.Fatal("unknown token matched")
	}
}

func BenchmarkAuthenticate(b *testing.B) {
	cfg := testConfig(b.TempDir())
	for i := range 16 {
		cfg.Server.Tokens = append(cfg.Server.Tokens, config.Token{Name: string(rune('a' + i)), SHA256: HashToken(string(rune('a' + i)))})
	}
	tokens := cfg.Server.Tokens
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := matchToken(tokens, "p"); !ok {
			b.Fatal("no match")
		}
	}
}
