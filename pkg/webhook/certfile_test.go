package webhook

import (
	"bytes"
	"context"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
)

// writeKeyPair writes a new self-signed certificate for name and its key,
// and returns the certificate's DER.
func writeKeyPair(t *testing.T, certFile, keyFile, name string) []byte {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(name, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	return block.Bytes
}

// A rotated pair is served once Run has looked at the files (a handshake
// reads nothing from disk); a half-written one keeps the last good pair; a
// missing pair at start is an error.
func TestCertFilesFollowRotation(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	clk := testingclock.NewFakeClock(time.Now())
	if _, err := NewCertFiles(certFile, keyFile, clk); err == nil {
		t.Fatal("no key pair on disk, and no error")
	}
	first := writeKeyPair(t, certFile, keyFile, "webhook.nodeagent.svc")
	c, err := NewCertFiles(certFile, keyFile, clk)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx)
	serving := func(der []byte) func() bool {
		return func() bool {
			got, err := c.GetCertificate(nil)
			return err == nil && bytes.Equal(got.Certificate[0], der)
		}
	}

	second := writeKeyPair(t, certFile, keyFile, "webhook.nodeagent.svc")
	future := time.Now().Add(time.Minute) // a modification the first read cannot have seen
	for _, f := range []string{certFile, keyFile} {
		if err := os.Chtimes(f, future, future); err != nil {
			t.Fatal(err)
		}
	}
	if !serving(first)() {
		t.Fatal("a handshake read the rotated pair: it must not touch the disk")
	}
	testutil.WaitFor(t, "the rotated pair", func() bool { clk.Step(CertCheckInterval); return serving(second)() })

	if err := os.WriteFile(keyFile, []byte("half a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.check(); err == nil {
		t.Error("a half-written key read without an error")
	}
	if !serving(second)() {
		t.Error("with a half-written key: want the last good pair")
	}
}
