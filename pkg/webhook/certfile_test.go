package webhook

import (
	"bytes"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
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

// A rotated pair is served from the next handshake; a half-written one
// keeps the last good pair; a missing pair at start is an error.
func TestCertFilesFollowRotation(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if _, err := NewCertFiles(certFile, keyFile); err == nil {
		t.Fatal("no key pair on disk, and no error")
	}
	writeKeyPair(t, certFile, keyFile, "webhook.nodeagent.svc")
	c, err := NewCertFiles(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	second := writeKeyPair(t, certFile, keyFile, "webhook.nodeagent.svc")
	future := time.Now().Add(time.Minute) // a modification the first read cannot have seen
	for _, f := range []string{certFile, keyFile} {
		if err := os.Chtimes(f, future, future); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.GetCertificate(nil)
	if err != nil || !bytes.Equal(got.Certificate[0], second) {
		t.Fatalf("after the rotation: %v; want the second certificate", err)
	}
	if err := os.WriteFile(keyFile, []byte("half a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err = c.GetCertificate(nil)
	if err != nil || !bytes.Equal(got.Certificate[0], second) {
		t.Errorf("with a half-written key: %v; want the last good pair", err)
	}
}
