// Package pgtest gives tests a real PostgreSQL: the server named by
// PITH_TEST_POSTGRES when set, else a private one started from the
// postgresql binaries (initdb + pg_ctl in a temp dir, listening only on a
// unix socket), run as the postgres user when the tests run as root, since
// PostgreSQL refuses to run as root. One server serves a whole test binary:
// call Main from TestMain, then URL (or NewDatabase) from the tests.
package pgtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

var (
	baseURL string // "" when no server could be had
	why     string // why not
	dataDir string
	runAs   []string // the command prefix running the server's tools
	seq     atomic.Int64
)

// Main runs the tests and stops the private server if one was started.
// The server starts on the first NewDatabase, so a test binary re-run as
// a helper subprocess starts none. Use as:
// func TestMain(m *testing.M) { pgtest.Main(m) }.
func Main(m *testing.M, cleanups ...func()) {
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	if dir != "" {
		stop()
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

var (
	once sync.Once
	dir  string // the private server's temp dir
)

// server finds or starts the server once per process.
func server() {
	once.Do(func() {
		if u := os.Getenv("PITH_TEST_POSTGRES"); u != "" {
			baseURL = u
			return
		}
		d, err := start()
		dir = d
		if err != nil {
			why = err.Error()
		}
	})
}

// binDir finds initdb and pg_ctl: on PATH, else Debian's versioned dir.
func binDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(m) == 0 {
		return "", fmt.Errorf("the PostgreSQL server binaries (initdb, pg_ctl) are not installed (apt-get install postgresql) and PITH_TEST_POSTGRES is not set")
	}
	return filepath.Dir(m[len(m)-1]), nil
}

func start() (string, error) {
	bin, err := binDir()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "pith-pg-")
	if err != nil {
		return "", err
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return dir, fmt.Errorf("running as root and there is no postgres user to run PostgreSQL as: %v", err)
		}
		if err := exec.Command("chown", u.Username, dir).Run(); err != nil {
			return dir, fmt.Errorf("chown %s: %v", dir, err)
		}
		runAs = []string{"runuser", "-u", "postgres", "--"}
	}
	dataDir = filepath.Join(dir, "data")
	if out, err := run(filepath.Join(bin, "initdb"), "-D", dataDir, "-A", "trust", "-U", "pith", "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		return dir, fmt.Errorf("initdb: %v: %s", err, out)
	}
	opts := fmt.Sprintf("-k %s -c listen_addresses='' -c fsync=off -c max_connections=200", dir)
	if out, err := run(filepath.Join(bin, "pg_ctl"), "-D", dataDir, "-o", opts, "-w", "-l", filepath.Join(dir, "log"), "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		return dir, fmt.Errorf("pg_ctl start: %v: %s %s", err, out, log)
	}
	ctlPath = filepath.Join(bin, "pg_ctl")
	baseURL = "postgres://pith@/postgres?host=" + dir
	watchdog(dir)
	return dir, nil
}

var ctlPath string

// watchdog leaves a shell behind that stops the server and removes dir
// once this process is gone, however it ends (a test timeout, kill -9 of
// a helper), so no server outlives its tests.
func watchdog(dir string) {
	script := fmt.Sprintf(`while [ -d /proc/%d ]; do sleep 1; done; %s %s -D %s -m immediate stop >/dev/null 2>&1; rm -rf %s`,
		os.Getpid(), strings.Join(runAs, " "), ctlPath, dataDir, dir)
	// The outer shell exits at once and leaves the loop to init: a child
	// of this process would look like a leaked plugin to the tests that
	// check that nothing they started outlives them.
	cmd := exec.Command("sh", "-c", "("+script+") </dev/null >/dev/null 2>&1 &")
	cmd.SysProcAttr = detached()
	_ = cmd.Run()
}

func run(name string, args ...string) ([]byte, error) {
	full := append(append([]string{}, runAs...), name)
	full = append(full, args...)
	c := exec.Command(full[0], full[1:]...)
	return c.CombinedOutput()
}

func stop() {
	if ctlPath != "" {
		run(ctlPath, "-D", dataDir, "-m", "immediate", "stop")
	}
}

// Stop stops the private server (fast, as a crash would), for tests of an
// unavailable database; Restart starts it again. Both fail the test with
// an external server.
func Stop(t testing.TB) {
	t.Helper()
	if ctlPath == "" {
		t.Skip("PITH_TEST_POSTGRES names an external server; not stopping it")
	}
	if out, err := run(ctlPath, "-D", dataDir, "-m", "immediate", "stop"); err != nil {
		t.Fatalf("pg_ctl stop: %v: %s", err, out)
	}
}

// Restart starts the private server again after Stop.
func Restart(t testing.TB) {
	t.Helper()
	dir := filepath.Dir(dataDir)
	opts := fmt.Sprintf("-k %s -c listen_addresses='' -c fsync=off -c max_connections=200", dir)
	if out, err := run(ctlPath, "-D", dataDir, "-o", opts, "-w", "-l", filepath.Join(dir, "log"), "start"); err != nil {
		t.Fatalf("pg_ctl start: %v: %s", err, out)
	}
}

// Missing says why there is no server for the tests, or "" when there is
// one: for a test that runs partly without PostgreSQL.
func Missing() string {
	server()
	if baseURL != "" {
		return ""
	}
	if why == "" {
		return "pgtest.Main was not called from TestMain"
	}
	return why
}

// NewDatabase creates an empty database for one test and returns its URL;
// the test skips, saying why, when there is no server.
func NewDatabase(t testing.TB) string {
	t.Helper()
	if m := Missing(); m != "" {
		t.Skip("no PostgreSQL: " + m)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, baseURL)
	if err != nil {
		t.Fatalf("connect to the test PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("pith_test_%d_%d", os.Getpid(), seq.Add(1))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		// An external server keeps nothing of the tests; a private one is
		// removed whole anyway.
		if c, err := pgx.Connect(ctx, baseURL); err == nil {
			c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(ctx)
		}
	})
	return withDatabase(baseURL, name)
}

// withDatabase replaces the database of a postgres:// URL.
func withDatabase(u, name string) string {
	scheme, rest, _ := strings.Cut(u, "://")
	auth, tail, _ := strings.Cut(rest, "/")
	_, query, hasQuery := strings.Cut(tail, "?")
	out := scheme + "://" + auth + "/" + name
	if hasQuery {
		out += "?" + query
	}
	return out
}
