package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/pkg/webhook"
)

func runWebhook(args []string, stdout io.Writer) error {
	fs := newFlagSet("webhook", "Serve the opt-in mutating admission webhook for pods: in namespaces labelled "+webhook.ServeLabel+"="+webhook.ServeEnabled+", a new pod's configMap volumes become the CSI driver's (docs/csi.md, \"Without editing workloads\"). The webhook configuration's failurePolicy Ignore keeps pods starting, unconverted, while it is down.", stdout)
	address := fs.String("address", ":8443", "Serve HTTPS here: /convert (AdmissionReview v1) and /healthz.")
	certFile := fs.String("tls-cert-file", "", "The serving certificate (PEM), for the webhook Service's DNS name; read again when it changes (cert-manager, a mounted Secret).")
	keyFile := fs.String("tls-private-key-file", "", "The serving certificate's private key (PEM).")
	namespace := fs.String("namespace", os.Getenv("POD_NAMESPACE"), "The webhook's own namespace, whose pods it never converts. Default: $POD_NAMESPACE.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *certFile == "" || *keyFile == "" {
		return errors.New("--tls-cert-file and --tls-private-key-file are required: the apiserver calls webhooks over HTTPS only")
	}
	certs, err := webhook.NewCertFiles(*certFile, *keyFile)
	if err != nil {
		return err
	}
	listener, err := net.Listen("tcp", *address)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return serveWebhook(ctx, listener, certs, &webhook.Handler{Namespace: *namespace})
}

// serveWebhook serves the handler over TLS on listener until ctx ends.
func serveWebhook(ctx context.Context, listener net.Listener, certs *webhook.CertFiles, handler http.Handler) error {
	mux := http.NewServeMux()
	mux.Handle("/convert", handler)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	server := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate},
	}
	done := make(chan error, 1)
	go func() { done <- server.ServeTLS(listener, "", "") }()
	klog.InfoS("Admission webhook serving", "address", listener.Addr().String())
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return server.Shutdown(shutdown)
}
