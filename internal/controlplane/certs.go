package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// credentials are the files the apiserver and its admin client need. The
// apiserver generates its own self-signed serving certificate in certDir;
// everything else is made here.
type credentials struct {
	clientCAFile      string // CA that signs client certificates (--client-ca-file)
	adminCertFile     string // client certificate in group system:masters
	adminKeyFile      string
	serviceAccountKey string // RSA private key: signs service account tokens
	serviceAccountPub string // its public key: verifies them
	servingCertDir    string // --cert-dir: the apiserver writes apiserver.crt/.key here
	servingCertFile   string // written by the apiserver at its first start; the kubeconfig trusts it
	auditPolicyFile   string // which requests the audit log records
	auditLogFile      string // the audit log: one JSON event per line

	// The client CA, kept to issue node identities (NodeRESTConfig).
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
}

// writeCredentials generates a client CA, an admin client certificate and a
// service account key pair under dir.
func writeCredentials(dir string) (*credentials, error) {
	c := &credentials{
		clientCAFile:      filepath.Join(dir, "client-ca.crt"),
		adminCertFile:     filepath.Join(dir, "admin.crt"),
		adminKeyFile:      filepath.Join(dir, "admin.key"),
		serviceAccountKey: filepath.Join(dir, "sa.key"),
		serviceAccountPub: filepath.Join(dir, "sa.pub"),
		servingCertDir:    filepath.Join(dir, "serving"),
		auditPolicyFile:   filepath.Join(dir, "audit-policy.yaml"),
		auditLogFile:      filepath.Join(dir, "audit.log"),
	}
	c.servingCertFile = filepath.Join(c.servingCertDir, "apiserver.crt")

	caDER, err := c.newClientCA()
	if err != nil {
		return nil, err
	}
	// system:masters is bound to cluster-admin by the apiserver's RBAC
	// bootstrap policy, so this identity may do anything, /metrics included.
	adminDER, adminKeyDER, err := c.issueClientCertificate("nodeagent-admin", "system:masters")
	if err != nil {
		return nil, fmt.Errorf("creating admin certificate: %w", err)
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}

	for _, f := range []struct {
		path, kind string
		der        []byte
	}{
		{c.clientCAFile, "CERTIFICATE", caDER},
		{c.adminCertFile, "CERTIFICATE", adminDER},
		{c.adminKeyFile, "EC PRIVATE KEY", adminKeyDER},
		{c.serviceAccountKey, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)},
		{c.serviceAccountPub, "PUBLIC KEY", saPubDER},
	} {
		data := pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der})
		if err := os.WriteFile(f.path, data, 0o600); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(c.servingCertDir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.auditPolicyFile, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	return c, nil
}

// newClientCA makes the client CA that signs every client certificate of
// the control plane, keeps it in c, and returns it DER-encoded.
func (c *credentials) newClientCA() ([]byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "nodeagent-test-client-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("creating client CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	c.caCert, c.caKey = caCert, caKey
	return caDER, nil
}

// issueClientCertificate signs a new key's client certificate for user in
// group, and returns both DER-encoded.
func (c *credentials) issueClientCertificate(user, group string) (certDER, keyDER []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: user, Organization: []string{group}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if certDER, err = x509.CreateCertificate(rand.Reader, template, c.caCert, &key.PublicKey, c.caKey); err != nil {
		return nil, nil, err
	}
	if keyDER, err = x509.MarshalECPrivateKey(key); err != nil {
		return nil, nil, err
	}
	return certDER, keyDER, nil
}
