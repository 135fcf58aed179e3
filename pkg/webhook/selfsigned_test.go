package webhook

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"
)

const testService = "nodeagent-webhook.nodeagent.svc"

func newSelfSigned(client *fake.Clientset, clock *testingclock.FakeClock) *SelfSigned {
	return &SelfSigned{Secrets: client.CoreV1().Secrets("nodeagent"), Configurations: client.AdmissionregistrationV1().MutatingWebhookConfigurations(), Namespace: "nodeagent", SecretName: "webhook-tls", DNSNames: []string{testService},
		WebhookConfiguration: "nodeagent", CALifetime: 300 * 24 * time.Hour, CertLifetime: 30 * 24 * time.Hour, Clock: clock}
}

// newClient is a fake cluster with the webhook's configuration.
func newClient() *fake.Clientset {
	return fake.NewClientset(&admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "nodeagent"},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{{Name: "pods.configmaps.nodeagent.io"}},
	})
}

// verify checks that s serves a certificate for the Service that the
// configuration's caBundle trusts, and returns the certificate.
func verify(t *testing.T, client *fake.Clientset, s *SelfSigned, now time.Time) *x509.Certificate {
	t.Helper()
	return verifyWith(t, bundleOf(t, client), s, now)
}

// bundleOf is the configuration's caBundle.
func bundleOf(t *testing.T, client *fake.Clientset) []byte {
	t.Helper()
	config, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), "nodeagent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return config.Webhooks[0].ClientConfig.CABundle
}

// verifyWith checks that s serves a certificate for the Service that
// bundle trusts, and returns the certificate.
func verifyWith(t *testing.T, bundle []byte, s *SelfSigned, now time.Time) *x509.Certificate {
	t.Helper()
	served, err := s.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(served.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		t.Fatal("no CA in the caBundle")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: testService, Roots: roots, CurrentTime: now}); err != nil {
		t.Fatalf("the served certificate is not trusted by the caBundle: %v", err)
	}
	return leaf
}

// The first check makes a CA and a serving certificate that the caBundle
// trusts; later checks change nothing until two thirds of the serving
// certificate's life; then it is renewed under the same CA; when the CA
// is due, the next one joins the bundle and signs the serving certificate
// a check interval later, with the old one still in the bundle, and every
// replica serves what the Secret holds.
func TestSelfSignedCertificatesAreRenewedBeforeExpiry(t *testing.T) {
	ctx := context.Background()
	clock := testingclock.NewFakeClock(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC))
	client := newClient()
	s := newSelfSigned(client, clock)
	if _, err := s.GetCertificate(nil); err == nil {
		t.Error("a certificate before the first check")
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	first := verify(t, client, s, clock.Now())
	clock.Step(19 * 24 * time.Hour) // under two thirds of 30 days
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if got := verify(t, client, s, clock.Now()); !got.Equal(first) {
		t.Error("renewed before two thirds of its life")
	}
	clock.Step(2 * 24 * time.Hour)
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	second := verify(t, client, s, clock.Now())
	if second.Equal(first) || string(second.AuthorityKeyId) != string(first.AuthorityKeyId) {
		t.Error("not renewed after two thirds of its life, or under another CA")
	}

	other := newSelfSigned(client, clock) // a second replica
	if err := other.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if got := verify(t, client, other, clock.Now()); !got.Equal(second) {
		t.Error("a second replica serves another certificate than the Secret's")
	}

	for day := 22; day < 199; day++ { // both replicas check, up to the day before the CA is due
		clock.Step(24 * time.Hour)
		for _, replica := range []*SelfSigned{s, other} {
			if err := replica.Check(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	verify(t, client, other, clock.Now())
	clock.Step(2 * 24 * time.Hour) // the CA past two thirds of 300 days
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	staged := bundleOf(t, client)
	if got := verify(t, client, s, clock.Now()); string(got.AuthorityKeyId) != string(first.AuthorityKeyId) {
		t.Error("the next CA signed a certificate in the check that put it in the bundle")
	}
	if n := strings.Count(string(staged), "BEGIN CERTIFICATE"); n != 2 {
		t.Errorf("%d CAs in the bundle while the next one waits; want the CA and the next", n)
	}
	clock.Step(s.CheckInterval())
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	// Trusted by the bundle of the check before: the apiserver had it.
	third := verifyWith(t, staged, s, clock.Now())
	if string(third.AuthorityKeyId) == string(first.AuthorityKeyId) {
		t.Error("the CA was not renewed")
	}
	// The replica that has not checked yet still serves a certificate of
	// the old CA, which the bundle still trusts.
	verify(t, client, other, clock.Now())
}

// A Secret whose certificate is for other names (the Service renamed) is
// renewed for the names asked.
func TestSelfSignedFollowsTheServiceName(t *testing.T) {
	ctx := context.Background()
	clock := testingclock.NewFakeClock(time.Now())
	client := fake.NewClientset(&admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "nodeagent"}, Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "w"}}})
	s := newSelfSigned(client, clock)
	s.DNSNames = []string{"old.nodeagent.svc"}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	s.DNSNames = []string{testService}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	verify(t, client, s, clock.Now())
	secret, _ := client.CoreV1().Secrets("nodeagent").Get(ctx, "webhook-tls", metav1.GetOptions{})
	if block, _ := pem.Decode(secret.Data[SecretPreviousCA]); block != nil {
		t.Error("a renewed serving certificate rotated the CA")
	}
}

// With lifetimes of minutes (a cluster's policy, or a test's), the checks
// come every tenth of the shorter one, and two replicas checking in turn
// serve, at every moment, a certificate that the caBundle trusts, as the
// apiserver had it half a check interval before (its watch of the
// configuration can lag the write), while the CA and the certificate are
// each renewed several times.
func TestShortLifetimesRenewWithoutAGap(t *testing.T) {
	ctx := context.Background()
	clock := testingclock.NewFakeClock(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC))
	client := newClient()
	replicas := []*SelfSigned{newSelfSigned(client, clock), newSelfSigned(client, clock)}
	for _, r := range replicas {
		r.CALifetime, r.CertLifetime = 2*time.Minute, time.Minute
		if err := r.Check(ctx); err != nil {
			t.Fatal(err)
		}
	}
	interval := replicas[0].CheckInterval()
	if interval != 6*time.Second {
		t.Fatalf("checks every %s, want a tenth of the certificate's minute", interval)
	}
	cas, certs := map[string]bool{}, map[string]bool{}
	for step := range 200 { // 10 minutes; the replicas check half an interval apart
		lagging := bundleOf(t, client) // the bundle as it was half an interval before the check below served
		r := replicas[step%2]
		if err := r.Check(ctx); err != nil {
			t.Fatal(err)
		}
		for _, each := range replicas {
			leaf := verifyWith(t, lagging, each, clock.Now())
			cas[string(leaf.AuthorityKeyId)], certs[string(leaf.Raw)] = true, true
		}
		clock.Step(interval / 2)
		for _, each := range replicas {
			verify(t, client, each, clock.Now())
		}
	}
	// Renewed at two thirds of their lives, not at every check: a CA about
	// every 82 s (76 s, then an interval in the bundle before it signs), a
	// certificate every 38 s (and with each new CA).
	if len(cas) < 6 || len(cas) > 9 || len(certs) < 12 || len(certs) > 20 {
		t.Errorf("%d CAs and %d certificates served in 10 minutes; want a CA renewed about every 82 s and a certificate every 38 s", len(cas), len(certs))
	}
}
