package pluginhost_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// startSup starts sp under a supervisor stopped at cleanup.
func startSup(t *testing.T, sp pluginhost.Spec) *pluginhost.Supervisor {
	t.Helper()
	sup := pluginhost.NewSupervisor(sp, pluginhost.Options{HealthInterval: -1})
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sup.Stop(context.Background()) })
	return sup
}

// curveOf is the curve of an ECDSA certificate's key, or "" for another key.
func curveOf(t *testing.T, sup *pluginhost.Supervisor) string {
	t.Helper()
	cert := pluginhost.PeerCertificate(sup)
	if cert == nil {
		t.Fatal("the plugin presented no certificate")
	}
	if !slices.Contains(cert.DNSNames, "localhost") {
		t.Fatalf("plugin certificate names %v, want localhost", cert.DNSNames)
	}
	k, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok {
		return ""
	}
	return k.Curve.Params().Name
}

// TestSDKPluginShowsP256Certificate: a plugin built with the SDK serves
// mutual TLS with its own P-256 certificate, which the host pinned from
// the handshake line, and answers over it.
func TestSDKPluginShowsP256Certificate(t *testing.T) {
	sup := startSup(t, spec("p256", 1, "-compact", "record"))
	if err := sup.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := curveOf(t, sup); c != elliptic.P256().Params().Name {
		t.Fatalf("plugin certificate curve %q, want P-256", c)
	}
}

// TestGoPluginAutoMTLSPluginStillWorks: a plugin built with plain go-plugin
// and its AutoMTLS — a P-521 certificate made by go-plugin, answering the
// host's P-256 one — starts, describes itself and takes an event.
func TestGoPluginAutoMTLSPluginStillWorks(t *testing.T) {
	bin, err := sdktest.BuildTo(t.TempDir(), "github.com/pith-dev/pith/internal/testplugins/automtls")
	if err != nil {
		t.Fatal(err)
	}
	sup := startSup(t, pluginhost.Spec{Name: "legacy", Path: bin, Timeout: 10 * time.Second})
	if d := sup.Description(); d.Name != "automtls" || !slices.Equal(d.Events, []hooks.EventID{hooks.EventCompact}) {
		t.Fatalf("Describe: %+v", d)
	}
	if err := sup.Compact(context.Background(), &hooks.CompactEvent{SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if c := curveOf(t, sup); c != elliptic.P521().Params().Name {
		t.Fatalf("go-plugin's AutoMTLS certificate curve %q, want P-521", c)
	}
}

// TestHandshakeWithoutCertificateRefused: a plugin whose handshake line
// carries no certificate is not used — the host has nothing to pin — and
// the error says why.
func TestHandshakeWithoutCertificateRefused(t *testing.T) {
	script := filepath.Join(t.TempDir(), "nocert")
	sock := filepath.Join(t.TempDir(), "none.sock")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho '1|1|unix|"+sock+"|grpc|'\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sup := pluginhost.NewSupervisor(pluginhost.Spec{Name: "nocert", Path: script}, pluginhost.Options{StartTimeout: 10 * time.Second})
	err := sup.Start(context.Background())
	if !errors.Is(err, pluginhost.ErrNoCertificate) {
		t.Fatalf("Start = %v, want ErrNoCertificate", err)
	}
}

// TestImpostorCertificateRefused: a plugin that serves with another
// certificate than the one its handshake line announces fails to start:
// the host trusts only the announced one.
func TestImpostorCertificateRefused(t *testing.T) {
	bin, err := sdktest.BuildTo(t.TempDir(), "github.com/pith-dev/pith/internal/testplugins/automtls")
	if err != nil {
		t.Fatal(err)
	}
	sup := pluginhost.NewSupervisor(pluginhost.Spec{Name: "impostor", Path: bin, Args: []string{"-impostor"}},
		pluginhost.Options{StartTimeout: 5 * time.Second})
	err = sup.Start(context.Background())
	if err == nil {
		sup.Stop(context.Background())
		t.Fatal("a plugin serving with a certificate other than the announced one was started")
	}
	t.Logf("refused: %v", err)
	if !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Start = %v, want a certificate error", err)
	}
}
