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
	"time"

	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/internal/cliflag"
	"github.com/nodeagent-io/nodeagent/internal/daemon"
	"github.com/nodeagent-io/nodeagent/pkg/accessreview"
	"github.com/nodeagent-io/nodeagent/pkg/coreclient"
	"github.com/nodeagent-io/nodeagent/pkg/csidriver"
	"github.com/nodeagent-io/nodeagent/pkg/webhook"
)

func runWebhook(args []string, stdout io.Writer) error {
	fs := newFlagSet("webhook", "Serve the opt-in mutating admission webhook for pods: in namespaces labelled "+webhook.ServeLabel+"="+webhook.ServeEnabled+", a new pod's configMap volumes become the CSI driver's (docs/csi.md, \"Without editing workloads\"). The webhook configuration's failurePolicy Ignore keeps pods starting, unconverted, while it is down.", stdout)
	f := webhookFlags{}
	fs.StringVar(&f.address, "address", ":8443", "Serve HTTPS here: /convert (AdmissionReview v1) and /healthz.")
	fs.BoolVar(&f.secrets, "secrets", false, "Convert secret volumes, and projected volumes of configMap and secret sources, too: for a driver in its Secrets mode (docs/csi.md, \"Secrets\"). A service account's token volume stays with the kubelet.")
	f.readAs = csidriver.ReadAsPod
	fs.Var(cliflag.NewChoice(&f.readAs, []csidriver.ReadAs{csidriver.ReadAsPod, csidriver.ReadAsDriver}), "read-as",
		"Whose permission the driver reads with (its own --read-as). pod: a volume moves only if the pod's service account may get, list and watch each object it reads (SubjectAccessReviews; "+
			"needs create on subjectaccessreviews); otherwise the kubelet keeps it, with a warning that names the grant missing. driver: every volume the driver can serve moves.")
	fs.StringVar(&f.certFile, "tls-cert-file", "", "The serving certificate (PEM), for the webhook Service's DNS name, read again within 10 s of a change (cert-manager, a mounted Secret). Empty: the webhook keeps its own (--self-signed-secret).")
	fs.StringVar(&f.keyFile, "tls-private-key-file", "", "The serving certificate's private key (PEM).")
	fs.StringVar(&f.namespace, "namespace", os.Getenv("POD_NAMESPACE"), "The webhook's own namespace, whose pods it never converts, and where its Secret is. Default: $POD_NAMESPACE.")
	fs.StringVar(&f.secret, "self-signed-secret", "nodeagent-webhook-tls", "Without --tls-cert-file: the Secret of the webhook's namespace where it keeps a CA of its own and the serving certificate that CA signs, each renewed at two thirds of its life.")
	fs.StringVar(&f.service, "service", "nodeagent-webhook", "Without --tls-cert-file: the webhook's Service, whose DNS names the serving certificate carries.")
	fs.StringVar(&f.configuration, "webhook-configuration", "nodeagent-webhook", "Without --tls-cert-file: the MutatingWebhookConfiguration whose caBundle the webhook keeps current.")
	fs.StringSliceVar(&f.dnsNames, "dns-names", nil, "Without --tls-cert-file: the serving certificate's DNS names. Default: the Service's, <service>.<namespace>.svc and .svc.cluster.local; set them for a webhook the configuration reaches by URL.")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to a kubeconfig, for --self-signed-secret. Empty: $KUBECONFIG, else ~/.kube/config, else the pod's service account, as kubectl finds the cluster.")
	fs.DurationVar(&f.caLifetime, "ca-lifetime", 5*365*24*time.Hour, "Without --tls-cert-file: how long the webhook's own CA is valid; it is renewed at two thirds of it.")
	fs.DurationVar(&f.certLifetime, "cert-lifetime", 90*24*time.Hour, "Without --tls-cert-file: how long the serving certificate is valid; it is renewed at two thirds of it. The certificates are checked every minute, or every tenth of the shorter lifetime.")
	if err := parseDaemonFlags(fs, args, f.validate); err != nil {
		return err
	}
	defer klog.Flush()
	ctx, stop := daemon.SignalContext()
	defer stop()
	certs, err := f.certificates(ctx)
	if err != nil {
		return err
	}
	listener, err := net.Listen("tcp", f.address)
	if err != nil {
		return err
	}
	handler := &webhook.Handler{Namespace: f.namespace, Secrets: f.secrets}
	if f.readAs == csidriver.ReadAsPod {
		if handler.Access, err = f.accessReviewer(); err != nil {
			return err
		}
	}
	return serveWebhook(ctx, listener, certs, handler)
}

// accessReviewer asks the apiserver what pods' service accounts may read.
func (f *webhookFlags) accessReviewer() (*accessreview.Reviewer, error) {
	cfg, err := daemon.RESTConfig(f.kubeconfig, "")
	if err != nil {
		return nil, err
	}
	return accessreview.New(cfg)
}

// webhookFlags are what `nodeagent webhook` is told.
type webhookFlags struct {
	address, certFile, keyFile, namespace string
	secret, service, configuration        string
	dnsNames                              []string
	secrets                               bool
	readAs                                csidriver.ReadAs
	kubeconfig                            string
	caLifetime, certLifetime              time.Duration
}

// validate refuses lifetimes SelfSigned cannot keep.
func (f *webhookFlags) validate() error {
	if f.certLifetime < webhook.MinCertLifetime {
		return fmt.Errorf("--cert-lifetime %s is under %s: the webhook checks its certificate every tenth of its life", f.certLifetime, webhook.MinCertLifetime)
	}
	if f.caLifetime < f.certLifetime {
		return fmt.Errorf("--ca-lifetime %s is shorter than --cert-lifetime %s: the CA must outlive the certificates it signs", f.caLifetime, f.certLifetime)
	}
	return nil
}

// certificates returns the serving certificate's source: the files, or a
// self-signed CA kept in a Secret, checked until ctx ends.
func (f *webhookFlags) certificates(ctx context.Context) (certificateSource, error) {
	if f.certFile != "" || f.keyFile != "" {
		if f.certFile == "" || f.keyFile == "" {
			return nil, errors.New("--tls-cert-file and --tls-private-key-file go together")
		}
		files, err := webhook.NewCertFiles(f.certFile, f.keyFile, nil)
		if err != nil {
			return nil, err
		}
		go files.Run(ctx)
		return files, nil
	}
	if f.namespace == "" {
		return nil, errors.New("--namespace (or $POD_NAMESPACE) is required for --self-signed-secret: the Secret lives in the webhook's namespace")
	}
	cfg, err := daemon.RESTConfig(f.kubeconfig, "")
	if err != nil {
		return nil, err
	}
	core, err := coreclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	configurations, err := webhook.NewConfigurationClient(cfg)
	if err != nil {
		return nil, err
	}
	names := f.dnsNames
	if len(names) == 0 {
		svc := f.service + "." + f.namespace + ".svc"
		names = []string{svc, svc + ".cluster.local"}
	}
	s := &webhook.SelfSigned{Secrets: core.Secrets(f.namespace), Configurations: configurations, Namespace: f.namespace, SecretName: f.secret,
		DNSNames: names, WebhookConfiguration: f.configuration, CALifetime: f.caLifetime, CertLifetime: f.certLifetime}
	if err := s.Check(ctx); err != nil {
		return nil, err
	}
	go s.Run(ctx)
	return s, nil
}

// certificateSource gives the TLS server its certificate.
type certificateSource interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

// serveWebhook serves the handler over TLS on listener until ctx ends.
func serveWebhook(ctx context.Context, listener net.Listener, certs certificateSource, handler http.Handler) error {
	mux := http.NewServeMux()
	mux.Handle("/convert", handler)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	server := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate},
	}
	klog.InfoS("Admission webhook serving", "address", listener.Addr().String())
	return daemon.Serve(ctx, server, listener)
}
