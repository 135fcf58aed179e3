package webhook

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// CertFiles serves the certificate of a key pair on disk, read again when
// either file changes: cert-manager, or a Secret mounted as a volume,
// rotates it without restarting the webhook.
type CertFiles struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime [2]time.Time
}

// NewCertFiles reads the key pair once, so that a wrong path fails at
// start.
func NewCertFiles(certFile, keyFile string) (*CertFiles, error) {
	c := &CertFiles{certFile: certFile, keyFile: keyFile}
	if _, err := c.GetCertificate(nil); err != nil {
		return nil, err
	}
	return c, nil
}

// GetCertificate is tls.Config's: the pair as it is on disk now. A pair
// that no longer loads (half-written during a rotation) keeps the last
// good one.
func (c *CertFiles) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	var mod [2]time.Time
	for i, path := range []string{c.certFile, c.keyFile} {
		info, err := os.Stat(path)
		if err != nil {
			return c.lastOr(fmt.Errorf("serving certificate: %w", err))
		}
		mod[i] = info.ModTime()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cert != nil && mod == c.modTime {
		return c.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		if c.cert != nil {
			return c.cert, nil
		}
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	c.cert, c.modTime = &cert, mod
	return c.cert, nil
}

// lastOr returns the last good certificate, or err when there is none.
func (c *CertFiles) lastOr(err error) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cert != nil {
		return c.cert, nil
	}
	return nil, err
}
