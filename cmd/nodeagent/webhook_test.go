package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	certutil "k8s.io/client-go/util/cert"

	"github.com/nodeagent-io/nodeagent/pkg/webhook"
)

// The webhook serves AdmissionReviews over TLS with the certificate it is
// given, and refuses to start without one.
func TestWebhookServesOverTLS(t *testing.T) {
	for _, args := range [][]string{{"--tls-cert-file=/x"}, {"--namespace="}} {
		if err := runWebhook(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	dir := t.TempDir()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for path, data := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	certs, err := webhook.NewCertFiles(certFile, keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveWebhook(ctx, listener, certs, &webhook.Handler{Namespace: "nodeagent"}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	pod := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"shop"},"spec":{"containers":[{"name":"c","image":"i"}],` +
		`"volumes":[{"name":"v","configMap":{"name":"cfg"}}]}}`)
	body, _ := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Create, Namespace: "shop",
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Object: runtime.RawExtension{Raw: pod}},
	})
	resp, err := client.Post("https://"+listener.Addr().String()+"/convert", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&review); err != nil || review.Response == nil {
		t.Fatalf("%s: %v", resp.Status, err)
	}
	if !review.Response.Allowed || !strings.Contains(string(review.Response.Patch), `"driver":"configmaps.nodeagent.io"`) {
		t.Errorf("response %+v, patch %s", review.Response, review.Response.Patch)
	}
}
