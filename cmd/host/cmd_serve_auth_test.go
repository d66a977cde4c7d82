package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
	"github.com/pith-dev/pith/internal/server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// writeConfigMap writes cfg as JSON through a rename, as editors do.
func writeConfigMap(t *testing.T, path string, cfg map[string]any) {
	t.Helper()
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, all written as PEM files in dir.
type testPKI struct {
	caFile, serverCert, serverKey, clientCert, clientKey string
	pool                                                 *x509.CertPool
}

func newTestPKI(t *testing.T, dir string) testPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pith test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p := testPKI{caFile: filepath.Join(dir, "ca.pem"), pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	writePEM(t, p.caFile, "CERTIFICATE", caDER)
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage, ips []net.IP) (certFile, keyFile string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
		writePEM(t, certFile, "CERTIFICATE", der)
		writePEM(t, keyFile, "EC PRIVATE KEY", kder)
		return certFile, keyFile
	}
	p.serverCert, p.serverKey = leaf("server", 2, x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	p.clientCert, p.clientKey = leaf("agent-1", 3, x509.ExtKeyUsageClientAuth, nil)
	return p
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func authConfig(tlsKeys map[string]any, tokens []map[string]any) map[string]any {
	return map[string]any{
		"sessions": map[string]any{"root": "sessions"},
		"server":   map[string]any{"shutdownTimeout": "5s", "tls": tlsKeys, "tokens": tokens},
	}
}

// TestServeRefusesExposedWithoutAuth: an address other machines can reach
// is refused at start, in one line naming the keys to set, whether it
// comes from the file or from --listen. Nothing is bound.
func TestServeRefusesExposedWithoutAuth(t *testing.T) {
	dir := t.TempDir()
	run := func(cfg map[string]any, extra ...string) string {
		path := filepath.Join(dir, "pith.json")
		writeConfigMap(t, path, cfg)
		cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestServeHelperProcess$", "--", "--config", path}, extra...)...)
		cmd.Env = append(os.Environ(), "PITH_SERVE_HELPER=1")
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("pith serve did not fail: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for name, tc := range map[string]struct {
		cfg   map[string]any
		extra []string
	}{
		"flag":        {authConfig(map[string]any{}, nil), []string{"--listen", "0.0.0.0:0"}},
		"file":        {map[string]any{"sessions": map[string]any{"root": "s"}, "server": map[string]any{"listen": "0.0.0.0:7420"}}, nil},
		"metrics":     {authConfig(map[string]any{}, nil), []string{"--listen", "127.0.0.1:0", "--metrics", ":0"}},
		"viewer":      {authConfig(map[string]any{}, nil), []string{"--listen", "127.0.0.1:0", "--viewer", "0.0.0.0:0"}},
		"tls no auth": {authConfig(map[string]any{"certFile": "c.pem", "keyFile": "k.pem"}, nil), []string{"--listen", "0.0.0.0:0"}},
	} {
		t.Run(name, func(t *testing.T) {
			out := run(tc.cfg, tc.extra...)
			if strings.Count(out, "\n") != 0 {
				t.Errorf("want one line, got:\n%s", out)
			}
			for _, want := range []string{"server.tls.certFile", "server.tls.clientCAFile or server.tokens"} {
				if !strings.Contains(out, want) {
					t.Errorf("refusal does not name %s: %s", want, out)
				}
			}
		})
	}
}

// TestServeTokens: TLS plus bearer tokens scoped to a tenant each. No
// token or an unknown one → Unauthenticated; team-a reaching team-b's
// sessions (by path or by id) → PermissionDenied; team-a's token removed
// by a hot reload → its next call is refused.
func TestServeTokens(t *testing.T) {
	dir := t.TempDir()
	pki := newTestPKI(t, dir)
	tlsKeys := map[string]any{"certFile": pki.serverCert, "keyFile": pki.serverKey}
	teamA := map[string]any{"name": "team-a", "sha256": server.HashToken("token-a"), "prefix": "team-a/"}
	teamB := map[string]any{"name": "team-b", "sha256": server.HashToken("token-b"), "prefix": "team-b/"}
	cfgPath := filepath.Join(dir, "pith.json")
	writeConfigMap(t, cfgPath, authConfig(tlsKeys, []map[string]any{teamA, teamB}))
	p := startServe(t, cfgPath)
	ctx := context.Background()
	dial := func(opts ...client.Option) *client.Client {
		c, err := client.Dial(p.addr, append([]client.Option{client.WithTLS(&tls.Config{RootCAs: pki.pool})}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	if _, err := dial().Create(ctx, "team-a/s.jsonl", "/w"); !errors.Is(err, client.ErrUnauthenticated) {
		t.Fatalf("no token: %v, want unauthenticated", err)
	}
	if _, err := dial(client.WithToken("token-c")).Create(ctx, "team-a/s.jsonl", "/w"); !errors.Is(err, client.ErrUnauthenticated) {
		t.Fatalf("unknown token: %v, want unauthenticated", err)
	} else if strings.Count(err.Error(), "unauthenticated") != 1 || !strings.Contains(err.Error(), "unknown or revoked token") {
		t.Fatalf("unknown token: %q says its kind other than once", err)
	}
	a, b := dial(client.WithToken("token-a")), dial(client.WithToken("token-b"))
	sa, err := a.Create(ctx, "team-a/s.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Create(ctx, "team-b/s.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create(ctx, "team-b/s.jsonl", "/w"); !errors.Is(err, client.ErrPermissionDenied) {
		t.Fatalf("team-a opening team-b's session: %v, want permission denied", err)
	}
	if _, err := a.Create(ctx, "team-b/new.jsonl", "/w"); !errors.Is(err, client.ErrPermissionDenied) {
		t.Fatalf("team-a creating under team-b: %v, want permission denied", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sessions", "team-b", "new.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused create made a file: %v", err)
	}
	// A forged call naming team-b's session id with team-a's token.
	conn, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pki.pool})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rpc := pb.NewSessionServiceClient(conn)
	actx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer token-a")
	if _, err := rpc.GetContext(actx, &pb.GetContextRequest{SessionId: sb.ID}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("team-a reading team-b's session by id: %v, want PermissionDenied", err)
	}
	if _, err := rpc.Append(actx, &pb.AppendRequest{SessionId: sb.ID, Messages: [][]byte{serveMessage("user", "x", 1)}}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("team-a appending to team-b's session by id: %v, want PermissionDenied", err)
	}
	if _, err := sa.AppendMessages(ctx, serveMessage("user", "hello", 3)); err != nil {
		t.Fatal(err)
	}

	// Revoke team-a: its very next call after the reload is refused,
	// team-b carries on.
	writeConfigMap(t, cfgPath, authConfig(tlsKeys, []map[string]any{teamB}))
	p.waitLog(t, "config reloaded")
	if _, err := sa.Context(ctx); !errors.Is(err, client.ErrUnauthenticated) {
		t.Fatalf("revoked token: %v, want unauthenticated", err)
	}
	if _, err := sb.Context(ctx); err != nil {
		t.Fatalf("team-b after team-a's revocation: %v", err)
	}
}

// TestServeMutualTLS: with server.tls.clientCAFile a client certificate
// signed by that CA is required; without one the call is Unauthenticated.
func TestServeMutualTLS(t *testing.T) {
	dir := t.TempDir()
	pki := newTestPKI(t, dir)
	cfgPath := filepath.Join(dir, "pith.json")
	writeConfigMap(t, cfgPath, authConfig(map[string]any{"certFile": pki.serverCert, "keyFile": pki.serverKey, "clientCAFile": pki.caFile}, nil))
	p := startServe(t, cfgPath)
	ctx := context.Background()

	anon, err := client.Dial(p.addr, client.WithTLSFiles(pki.caFile, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if _, err := anon.Create(ctx, "m/s.jsonl", "/w"); !errors.Is(err, client.ErrUnauthenticated) {
		t.Fatalf("no client certificate: %v, want unauthenticated", err)
	}
	c, err := client.Dial(p.addr, client.WithTLSFiles(pki.caFile, pki.clientCert, pki.clientKey))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Create(ctx, "m/s.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, serveMessage("user", "hi", 2)); err != nil {
		t.Fatal(err)
	}
}

// TestServeUnixSocket: a unix socket is created with mode 0600.
func TestServeUnixSocket(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "pith.json")
	writeConfigMap(t, cfgPath, authConfig(map[string]any{}, nil))
	sock := filepath.Join(dir, "pith.sock")
	p := startServe(t, cfgPath, "--listen", "unix:"+sock)
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Fatalf("socket mode %o, want 600", perm)
	}
	c, err := client.Dial(p.addr, client.WithToken("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create(context.Background(), "u.jsonl", "/w"); err != nil {
		t.Fatal(err)
	}
}

// TestHashToken: the config entry printed for a token carries its
// SHA-256, never the token; --generate shows a new token once, on stderr.
func TestHashToken(t *testing.T) {
	cmd := newHashTokenCommand()
	var out, errOut strings.Builder
	cmd.SetIn(strings.NewReader("s3cret\n"))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"--name", "team-a", "--prefix", "team-a/"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), server.HashToken("s3cret")) || strings.Contains(out.String(), "s3cret") || !strings.Contains(out.String(), `"team-a/"`) {
		t.Fatalf("output:\n%s", out.String())
	}
	// The sum last: a file cut inside the entry is then invalid rather
	// than a token without its prefix.
	if strings.Index(out.String(), "sha256:") < strings.Index(out.String(), "prefix:") {
		t.Fatalf("sha256 before prefix:\n%s", out.String())
	}
	cmd = newHashTokenCommand()
	out.Reset()
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"--generate"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(strings.TrimPrefix(errOut.String(), "token (shown once): "))
	if len(tok) < 40 || !strings.Contains(out.String(), server.HashToken(tok)) {
		t.Fatalf("generated token %q, output:\n%s", tok, out.String())
	}
}
