package webhook

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// The keys of the Secret SelfSigned keeps its certificates in.
const (
	SecretCACert     = "ca.crt"
	SecretCAKey      = "ca.key"
	SecretPreviousCA = "ca-previous.crt"
	// The next CA, and when it joined the caBundle (RFC 3339): it signs
	// nothing until a CheckInterval after that.
	SecretNextCACert = "ca-next.crt"
	SecretNextCAKey  = "ca-next.key"
	SecretNextSince  = "ca-next-since"
	SecretCert       = corev1.TLSCertKey
	SecretKey        = corev1.TLSPrivateKeyKey
)

// SelfSigned keeps the webhook's serving certificate without cert-manager:
// a CA of its own and a serving certificate it signs, both in a Secret of
// the webhook's namespace, each renewed when two thirds of its life have
// passed, and the webhook configuration's caBundle kept current. Replicas
// share the Secret: whoever renews first writes it (an update conditional
// on the resourceVersion it read), the others read it at their next check.
//
// A CA due for renewal is followed by the next one in two steps: the next
// CA joins the caBundle first, and signs the serving certificate only a
// CheckInterval later, once the apiserver, which reads the configuration
// through a watch of its own, has long had it; the bundle keeps the
// previous CA until it expires. So the apiserver trusts every replica's
// certificate throughout a rotation, even one it reads the moment
// another replica wrote it.
type SelfSigned struct {
	// Secrets are the webhook namespace's; Configurations the cluster's
	// MutatingWebhookConfigurations.
	Secrets        SecretClient
	Configurations ConfigurationClient
	// Namespace and SecretName name the Secret.
	Namespace, SecretName string
	// DNSNames are the serving certificate's: the Service's names.
	DNSNames []string
	// WebhookConfiguration is the MutatingWebhookConfiguration whose
	// webhooks' caBundle it keeps current.
	WebhookConfiguration string
	// CALifetime and CertLifetime default to 5 years and 90 days.
	CALifetime, CertLifetime time.Duration
	// Clock is nil for the real clock.
	Clock clock.Clock

	mu   sync.Mutex
	cert *tls.Certificate
}

// SecretClient reads and writes the Secrets of the webhook's namespace
// (coreclient, or client-go's typed client).
type SecretClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error)
	Create(ctx context.Context, secret *corev1.Secret, opts metav1.CreateOptions) (*corev1.Secret, error)
	Update(ctx context.Context, secret *corev1.Secret, opts metav1.UpdateOptions) (*corev1.Secret, error)
}

// ConfigurationClient reads and writes MutatingWebhookConfigurations
// (NewConfigurationClient, or client-go's typed client).
type ConfigurationClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*admissionregistrationv1.MutatingWebhookConfiguration, error)
	Update(ctx context.Context, config *admissionregistrationv1.MutatingWebhookConfiguration, opts metav1.UpdateOptions) (*admissionregistrationv1.MutatingWebhookConfiguration, error)
}

// MinCertLifetime is the shortest serving certificate's life SelfSigned
// takes: a check every tenth of it must still find it.
const MinCertLifetime = 30 * time.Second

// CheckInterval is how often Run checks the Secret and the bundle: every
// minute, or every tenth of the shorter lifetime where that is less, so
// that a replica reads a renewed certificate long before the old one, or
// the CA that signed it, expires.
func (s *SelfSigned) CheckInterval() time.Duration {
	s.defaults()
	return min(time.Minute, min(s.CALifetime, s.CertLifetime)/10)
}

// Run checks the certificates at once and then every CheckInterval until
// ctx ends. A failed check is logged and tried again at the next.
func (s *SelfSigned) Run(ctx context.Context) {
	interval := s.CheckInterval()
	for {
		if err := s.Check(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "Checking the webhook's certificates failed; trying again", "in", interval)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.Clock.After(interval):
		}
	}
}

func (s *SelfSigned) defaults() {
	if s.Clock == nil {
		s.Clock = clock.RealClock{}
	}
	if s.CALifetime == 0 {
		s.CALifetime = 5 * 365 * 24 * time.Hour
	}
	if s.CertLifetime == 0 {
		s.CertLifetime = 90 * 24 * time.Hour
	}
}

// GetCertificate is tls.Config's: the serving certificate of the last
// check.
func (s *SelfSigned) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cert == nil {
		return nil, errors.New("no serving certificate yet: the first check of the Secret has not succeeded")
	}
	return s.cert, nil
}

// Check renews what is due, writes the bundle and then the Secret, and
// serves the Secret's certificate.
func (s *SelfSigned) Check(ctx context.Context) error {
	s.defaults()
	secrets := s.Secrets
	secret, err := secrets.Get(ctx, s.SecretName, metav1.GetOptions{})
	exists := err == nil
	if apierrors.IsNotFound(err) {
		secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.SecretName, Namespace: s.Namespace}, Type: corev1.SecretTypeOpaque}
	} else if err != nil {
		return fmt.Errorf("reading Secret %s/%s: %w", s.Namespace, s.SecretName, err)
	}
	data, changed, err := s.renew(secret.Data)
	if err != nil {
		return err
	}
	if err := s.ensureBundle(ctx, caBundle(data, s.Clock.Now())); err != nil {
		return err
	}
	if changed {
		secret.Data = data
		if exists {
			_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{})
		} else {
			_, err = secrets.Create(ctx, secret, metav1.CreateOptions{})
		}
		if err != nil {
			// Another replica renewed first: its certificates are read
			// at the next check.
			return fmt.Errorf("writing Secret %s/%s: %w", s.Namespace, s.SecretName, err)
		}
		klog.FromContext(ctx).Info("Renewed the webhook's certificates", "secret", klog.KRef(s.Namespace, s.SecretName),
			"nextCAInBundle", len(data[SecretNextCACert]) > 0)
	}
	cert, err := tls.X509KeyPair(data[SecretCert], data[SecretKey])
	if err != nil {
		return fmt.Errorf("the serving certificate of Secret %s/%s: %w", s.Namespace, s.SecretName, err)
	}
	s.mu.Lock()
	s.cert = &cert
	s.mu.Unlock()
	return nil
}

// renew returns the Secret's data with a CA and a serving certificate
// that are valid for at least a third of their lives, and whether it had
// to change anything.
func (s *SelfSigned) renew(old map[string][]byte) (map[string][]byte, bool, error) {
	now := s.Clock.Now()
	data := maps.Clone(old)
	if data == nil {
		data = map[string][]byte{}
	}
	caChanged, changed, err := s.renewCA(data, now)
	if err != nil {
		return nil, false, err
	}
	ca, caKey, err := parsePair(data[SecretCACert], data[SecretCAKey])
	if err != nil {
		return nil, false, err
	}
	serving, _, err := parsePair(data[SecretCert], data[SecretKey])
	if caChanged || err != nil || dueForRenewal(serving, now) || serving.CheckSignatureFrom(ca) != nil || !slices.Equal(serving.DNSNames, s.DNSNames) {
		certPEM, keyPEM, err := newCertificate(ca, caKey, s.DNSNames[0], s.DNSNames, now, s.CertLifetime)
		if err != nil {
			return nil, false, err
		}
		data[SecretCert], data[SecretKey] = certPEM, keyPEM
		changed = true
	}
	return data, changed, nil
}

// renewCA brings data's CA up to date: a new one at once where there is
// none to trust (a first install, or a Secret edited into a broken one);
// where the CA is due, a next CA beside it (in the bundle from this
// check on), which replaces it, the old one kept as the previous, once it
// has been there a CheckInterval. It says whether the signing CA changed,
// and whether anything did.
func (s *SelfSigned) renewCA(data map[string][]byte, now time.Time) (caChanged, changed bool, err error) {
	ca, _, err := parsePair(data[SecretCACert], data[SecretCAKey])
	switch {
	case err != nil:
		if data[SecretCACert], data[SecretCAKey], err = s.newCA(now); err != nil {
			return false, false, err
		}
		return true, true, nil
	case !dueForRenewal(ca, now):
		return false, false, nil
	}
	_, _, nextErr := parsePair(data[SecretNextCACert], data[SecretNextCAKey])
	since, sinceErr := time.Parse(time.RFC3339Nano, string(data[SecretNextSince]))
	if nextErr != nil || sinceErr != nil {
		if data[SecretNextCACert], data[SecretNextCAKey], err = s.newCA(now); err != nil {
			return false, false, err
		}
		data[SecretNextSince] = []byte(now.UTC().Format(time.RFC3339Nano))
		return false, true, nil
	}
	if now.Sub(since) < s.CheckInterval() {
		return false, false, nil
	}
	data[SecretPreviousCA] = data[SecretCACert]
	data[SecretCACert], data[SecretCAKey] = data[SecretNextCACert], data[SecretNextCAKey]
	delete(data, SecretNextCACert)
	delete(data, SecretNextCAKey)
	delete(data, SecretNextSince)
	return true, true, nil
}

// newCA makes a CA valid from now for CALifetime, PEM-encoded.
func (s *SelfSigned) newCA(now time.Time) (certPEM, keyPEM []byte, err error) {
	return newCertificate(nil, nil, "nodeagent-webhook-ca", nil, now, s.CALifetime)
}

// dueForRenewal says whether two thirds of cert's life have passed.
func dueForRenewal(cert *x509.Certificate, now time.Time) bool {
	life := cert.NotAfter.Sub(cert.NotBefore)
	return now.After(cert.NotBefore.Add(life * 2 / 3))
}

// caBundle is the CA, the next one where there is one, and, until it
// expires, the previous one.
func caBundle(data map[string][]byte, now time.Time) []byte {
	bundle := slices.Clone(data[SecretCACert])
	if block, _ := pem.Decode(data[SecretNextCACert]); block != nil {
		bundle = append(bundle, data[SecretNextCACert]...)
	}
	if block, _ := pem.Decode(data[SecretPreviousCA]); block != nil {
		if prev, err := x509.ParseCertificate(block.Bytes); err == nil && now.Before(prev.NotAfter) {
			bundle = append(bundle, data[SecretPreviousCA]...)
		}
	}
	return bundle
}

// ensureBundle sets every webhook's caBundle in the configuration.
func (s *SelfSigned) ensureBundle(ctx context.Context, bundle []byte) error {
	configs := s.Configurations
	config, err := configs.Get(ctx, s.WebhookConfiguration, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", s.WebhookConfiguration, err)
	}
	changed := false
	for i := range config.Webhooks {
		if !bytes.Equal(config.Webhooks[i].ClientConfig.CABundle, bundle) {
			config.Webhooks[i].ClientConfig.CABundle, changed = bundle, true
		}
	}
	if !changed {
		return nil
	}
	if _, err := configs.Update(ctx, config, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the caBundle of MutatingWebhookConfiguration %s: %w", s.WebhookConfiguration, err)
	}
	return nil
}

// parsePair parses a PEM certificate and its PEM EC key.
func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certBlock, _ := pem.Decode(certPEM)
	keyBlock, _ := pem.Decode(keyPEM)
	if certBlock == nil || keyBlock == nil {
		return nil, nil, errors.New("no PEM certificate and key")
	}
	cert, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(keyBlock.Bytes)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// newCertificate makes a certificate valid from now for lifetime: a CA
// when parent is nil, else a serving certificate for dnsNames signed by
// parent. It returns the certificate and its key, PEM-encoded.
func newCertificate(parent *x509.Certificate, parentKey *ecdsa.PrivateKey, commonName string, dnsNames []string, now time.Time, lifetime time.Duration) ([]byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: commonName}, DNSNames: dnsNames,
		// Leeway for clocks behind ours: a minute, or a tenth of a short life.
		NotBefore: now.Add(-min(time.Minute, lifetime/10)), NotAfter: now.Add(lifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	signer, signerKey := parent, parentKey
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature, nil
		signer, signerKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
