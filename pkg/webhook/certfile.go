package webhook

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// CertCheckInterval is how often CertFiles looks at its files. A rotation
// (cert-manager renews a month or more ahead; a Secret's volume takes up to
// a kubelet sync period to follow it) reaches the handshakes within it.
const CertCheckInterval = 10 * time.Second

// CertFiles serves the certificate of a key pair on disk, read again when
// either file changes: cert-manager, or a Secret mounted as a volume,
// rotates it without restarting the webhook. Run looks at the files every
// CertCheckInterval; a handshake reads the pair in memory and touches
// neither the disk nor a lock.
type CertFiles struct {
	certFile, keyFile string
	clock             clock.WithTicker

	cert atomic.Pointer[tls.Certificate]
	// modTime is the files' when cert was read; Run's alone.
	modTime [2]time.Time
}

// NewCertFiles reads the key pair once, so that a wrong path fails at
// start; clk may be nil (the real clock).
func NewCertFiles(certFile, keyFile string, clk clock.WithTicker) (*CertFiles, error) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	c := &CertFiles{certFile: certFile, keyFile: keyFile, clock: clk}
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// GetCertificate is tls.Config's: the last good pair Run read.
func (c *CertFiles) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.cert.Load(), nil
}

// Run reads the pair again whenever either file changed, until ctx ends.
// A pair that does not load (half-written during a rotation) is logged and
// the last good one kept.
func (c *CertFiles) Run(ctx context.Context) {
	ticker := c.clock.NewTicker(CertCheckInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			if err := c.check(); err != nil {
				klog.FromContext(ctx).Error(err, "Reading the serving certificate failed; the last good one is served")
			}
		}
	}
}

// check reads the pair if either file changed since the last read.
func (c *CertFiles) check() error {
	var mod [2]time.Time
	for i, path := range []string{c.certFile, c.keyFile} {
		info, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("serving certificate: %w", err)
		}
		mod[i] = info.ModTime()
	}
	if c.cert.Load() != nil && mod == c.modTime {
		return nil
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	c.cert.Store(&cert)
	c.modTime = mod
	return nil
}
