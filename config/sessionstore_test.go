package config

import (
	"strings"
	"testing"
)

func TestSessionsStoreValidation(t *testing.T) {
	for _, tc := range []struct {
		store, problem string
	}{
		{"", ""},
		{"postgres://pith@/pith?host=/run/postgresql", ""},
		{"postgresql://pith:s3cret@db.internal:5432/pith?sslmode=require", ""},
		{"files", "must be empty (the files store under sessions.root) or a postgres:// URL"},
		{"mysql://u:hunter2@db/pith", "must be empty"},
		{"postgres://u:hun%zzter2@db/pith", "is not a valid URL"},
	} {
		c := Defaults()
		c.Sessions.Store = tc.store
		err := c.Validate()
		if tc.problem == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.store, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "sessions.store") || !strings.Contains(err.Error(), tc.problem) {
			t.Errorf("%q: got %v, want a sessions.store problem %q", tc.store, err, tc.problem)
		}
		if err != nil && strings.Contains(err.Error(), "hun") {
			t.Errorf("%q: the error shows the password: %v", tc.store, err)
		}
	}
}

// TestSessionsStoreFromEnvironment: PITH_SESSIONS__STORE sets the key, as
// every other variable sets its own.
func TestSessionsStoreFromEnvironment(t *testing.T) {
	url := "postgres://pith:hunter2@db.internal/pith"
	c, err := Load("", WithEnviron(func() []string { return []string{"PITH_SESSIONS__STORE=" + url} }))
	if err != nil {
		t.Fatal(err)
	}
	if c.Sessions.Store != url || !c.Sessions.PostgreSQL() {
		t.Fatalf("sessions.store = %q, want %q", c.Sessions.Store, url)
	}
	out, err := c.Render(FormatYAML, true)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "hunter2") || !strings.Contains(string(out), "postgres://pith:xxxxx@db.internal/pith") {
		t.Errorf("rendered store:\n%s", out)
	}
}

func TestSessionsStoreScrub(t *testing.T) {
	s := Sessions{Store: "postgres://pith:p%40ss!w0rd@db/pith?password=qu3ry-secret&sslmode=disable"}
	if got := s.StoreDisplay(); strings.Contains(got, "w0rd") || strings.Contains(got, "qu3ry") {
		t.Errorf("StoreDisplay = %q", got)
	}
	for _, msg := range []string{
		"cannot parse `" + s.Store + "`: bad",
		"failed to connect: password p@ss!w0rd rejected",
		"dial p%40ss!w0rd and qu3ry-secret",
	} {
		if got := s.Scrub(msg); strings.Contains(got, "w0rd") || strings.Contains(got, "qu3ry") {
			t.Errorf("Scrub(%q) = %q", msg, got)
		}
	}
	if got := (Sessions{Store: "postgres://pith@db/pith?sslmode=disable"}).StoreDisplay(); got != "postgres://pith@db/pith?sslmode=disable" {
		t.Errorf("StoreDisplay without a password = %q", got)
	}
	if got := (Sessions{Store: "postgres://pith@db/pith?password=s3cret"}).StoreDisplay(); strings.Contains(got, "s3cret") || !strings.Contains(got, "pith@db") {
		t.Errorf("StoreDisplay with a password in the query = %q", got)
	}
	if got := (Sessions{}).StoreDisplay(); got != "files" {
		t.Errorf("default StoreDisplay = %q", got)
	}
}
