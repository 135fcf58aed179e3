//go:build e2e

package e2ekind

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeagent-io/nodeagent/pkg/report"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// rotations is how many times csiSecrets renews the server's certificate.
const rotations = 20

// serverName is the DNS name the test's certificates are for.
const serverName = "tls-server.e2e.test"

// certPair is a serving certificate and its key, PEM, signed by a CA of
// its own, which alone a client that checks it trusts.
type certPair struct {
	cert, key []byte
	ca        *x509.CertPool
	serial    *big.Int
}

// newCertPair makes a new CA and a serving certificate for serverName
// that it signs.
func newCertPair(t *testing.T, generation int) certPair {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(-time.Minute)
	caTemplate := &x509.Certificate{SerialNumber: big.NewInt(int64(1000 + generation)), Subject: pkix.Name{CommonName: fmt.Sprintf("e2e CA %d", generation)},
		NotBefore: now, NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial := big.NewInt(int64(2000 + generation))
	leaf := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: serverName}, DNSNames: []string{serverName},
		NotBefore: now, NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return certPair{cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), ca: pool, serial: serial}
}

func (p certPair) secret() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: p.cert, corev1.TLSPrivateKeyKey: p.key}}
}

// tlsServerPod serves TLS with the certificate of Secret tls, mounted by
// subPath from a driver volume of updates: inPlace: `nodeagent webhook`,
// which reads its certificate files again when they change.
func tlsServerPod(node string) *corev1.Pod {
	attrs := map[string]string{"secret": "tls", "updates": "inPlace", "defaultMode": "0400"}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tls-server"}, Spec: corev1.PodSpec{
		NodeName: node, ServiceAccountName: "server", TerminationGracePeriodSeconds: ptr.To[int64](1),
		Containers: []corev1.Container{{Name: "server", Image: agentImage,
			Args: []string{"webhook", "--address=:8443", "--namespace=none", "--tls-cert-file=/etc/tls/tls.crt", "--tls-private-key-file=/etc/tls/tls.key"},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "tls", MountPath: "/etc/tls/tls.crt", SubPath: corev1.TLSCertKey},
				{Name: "tls", MountPath: "/etc/tls/tls.key", SubPath: corev1.TLSPrivateKeyKey}}}},
		Volumes: []corev1.Volume{driverVolume("tls", attrs)},
	}}
}

// csiSecrets upgrades the driver to its Secrets mode (csi.secrets.enabled):
// a Secret volume's and a projected volume's files are the kubelet's for the
// same sources; and it serves a TLS server's kubernetes.io/tls Secret, mounted by subPath as
// tls.crt and tls.key: rotated rotations times to certificates of a new CA,
// each rotation is in the container's files within a second, and once the
// server reloads them it presents the last certificate to a client that
// trusts only the last CA. A pod whose account may not read the Secret is
// refused, and so is the driver's own account. Secret and projected
// volumes' update delays are measured, delays' rows. No byte of the Secret
// is on the node's disk: searched for under the kubelet's and the driver's
// directories, it is found only on tmpfs mounts; and once the pods are
// gone, no mount is left.
func csiSecrets(t *testing.T, delays *report.Table) {
	ctx := context.Background()
	helm(t, "upgrade", csiRelease, "deploy/helm/nodeagent", "--namespace", csiNamespace, "--reuse-values", "--set", "csi.secrets.enabled=true")
	waitCSIRollout(t, "the driver rolled out in the Secrets mode")
	ns := testNamespace(t, "e2e-kind-csi-secrets")
	t.Cleanup(func() { deletePods(t, ns) })
	if _, err := clientset.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "server"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e2eutil.GrantReads(t, clientset, ns, "server", "secrets", "tls")
	e2eutil.GrantReads(t, clientset, ns, "server", "configmaps", "cfg")
	pair := newCertPair(t, 0)
	if _, err := clientset.CoreV1().Secrets(ns).Create(ctx, pair.secret(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node := clusterNodes(t)[1]
	mustCreate(t, ns, tlsServerPod(node))
	secretFilesLikeKubelet(t, ns, node)
	secretRefusals(t, ns, node)
	inContainer(t, ns, "tls-server", "/etc/tls/tls.crt", string(pair.cert), 2*time.Minute)
	view := viewContainer(t, waitRunning(t, ns, "tls-server"))
	pair = rotateCertificates(t, ns, view)
	eventually(t, time.Minute, "the server presents the last certificate", func() string {
		return presents(t, ns, pair)
	})
	delays.Rows = append(delays.Rows, secretDelayRows(t, ns)...)
	secretOnlyOnTmpfs(t, node, pair.key)
	deletePods(t, ns)
	if mounts := tmpfsMounts(t, node); strings.Contains(mounts, "kubernetes.io~csi") {
		t.Errorf("tmpfs mounts of driver volumes left on %s after the pod went:\n%s", node, mounts)
	}
}

// rotateCertificates renews the Secret tls rotations times, each to a
// certificate of a new CA, and holds each rotation to a second from the
// update to the container's files. It returns the last pair.
func rotateCertificates(t *testing.T, ns string, view containerView) certPair {
	t.Helper()
	var pair certPair
	var delays []time.Duration
	for generation := 1; generation <= rotations; generation++ {
		pair = newCertPair(t, generation)
		if _, err := clientset.CoreV1().Secrets(ns).Update(context.Background(), pair.secret(), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		delays = append(delays, untilFiles(t, view, pair))
	}
	slices.Sort(delays)
	t.Logf("%d rotations in the container's files: median %s, longest %s", rotations, delays[len(delays)/2], delays[len(delays)-1])
	if longest := delays[len(delays)-1]; longest > time.Second {
		t.Errorf("a rotation took %s to reach the container's files, want each within 1 s (all: %v)", longest, delays)
	}
	return pair
}

// untilFiles polls the container's certificate and key through its root
// until both are pair's, and returns how long that took.
func untilFiles(t *testing.T, view containerView, pair certPair) time.Duration {
	t.Helper()
	start := time.Now()
	root := "/proc/" + view.pid + "/root/etc/tls/"
	want := append(slices.Clone(pair.cert), pair.key...)
	for deadline := start.Add(10 * time.Second); time.Now().Before(deadline); {
		if both, err := nodeExec(view.node, "cat", root+"tls.crt", root+"tls.key"); err == nil && bytes.Equal(both, want) {
			return time.Since(start)
		}
	}
	t.Fatalf("the container's tls.crt and tls.key are not the rotated pair after 10 s")
	return 0
}
