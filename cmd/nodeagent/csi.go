package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/internal/cliflag"
	"github.com/nodeagent-io/nodeagent/internal/daemon"
	"github.com/nodeagent-io/nodeagent/internal/version"
	"github.com/nodeagent-io/nodeagent/pkg/agent"
	"github.com/nodeagent-io/nodeagent/pkg/configmapcache"
	"github.com/nodeagent-io/nodeagent/pkg/coreclient"
	"github.com/nodeagent-io/nodeagent/pkg/csidriver"
)

// csiConfig is what `nodeagent csi` is told.
type csiConfig struct {
	kubeconfig, nodeName, driverName string
	kubeletRootDir, endpoint         string
	register                         bool
	stateDir, httpAddress, tokenDir  string
	checkAccess, secrets, profiling  bool
	readAs                           csidriver.ReadAs
	qps, eventQPS                    float32
	burst, eventBurst                int
}

func (c *csiConfig) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", kubeconfigHelp)
	fs.StringVar(&c.nodeName, "node-name", defaultNodeName(), "This node's name, the driver's node id. Default: $NODE_NAME, else the host name.")
	fs.StringVar(&c.driverName, "driver-name", csidriver.DefaultDriverName, "The driver's name: the CSIDriver object's, and what pods write in volumes[].csi.driver.")
	fs.StringVar(&c.kubeletRootDir, "kubelet-root-dir", "/var/lib/kubelet", "The kubelet's --root-dir, mounted at the same path: the CSI socket goes under plugins/<driver>/, the registration socket under plugins_registry/, and target paths are under pods/.")
	fs.StringVar(&c.endpoint, "endpoint", "", "The CSI socket's path, the same for the kubelet. Default: <kubelet-root-dir>/plugins/<driver-name>/csi.sock.")
	fs.BoolVar(&c.register, "register", true, "Register with the kubelet through its plugin registration socket (no node-driver-registrar needed).")
	fs.StringVar(&c.stateDir, "state-dir", "/var/lib/nodeagent/csi", "Where the driver records each published volume, so that it serves them again after a restart. A hostPath.")
	fs.StringVar(&c.httpAddress, "http-address", "127.0.0.1:10356", "Serve /metrics, /healthz, /readyz and /debug/volumes here; empty serves nothing.")
	c.readAs = csidriver.ReadAsPod
	fs.Var(cliflag.NewChoice(&c.readAs, []csidriver.ReadAs{csidriver.ReadAsDriver, csidriver.ReadAsPod}), "read-as",
		"Whose permission ConfigMaps are read with. pod: each volume's pod's service account, with the token the kubelet passes in every publish call (the CSIDriver object's tokenRequests, and requiresRepublish for the renewed tokens): "+
			"the driver's own account reads nothing, and a pod gets only what its account may get (PermissionDenied otherwise; nodeagent convert writes the grants). "+
			"driver: the driver's own service account (get, list and watch on every ConfigMap), as the kubelet serves a pod any ConfigMap of its namespace.")
	fs.StringVar(&c.tokenDir, "token-dir", "", "With --read-as=pod, a directory on a tmpfs (such as /run/nodeagent/csi-tokens, a hostPath) where each volume's pod token is kept, root's alone, so that a restarted driver serves every update at once; "+
		"a directory on any other filesystem keeps none (no token reaches a disk), with a TokenDirUnusable Warning event on the node. Empty keeps none: after a restart, each volume waits for the kubelet's next publish call (a pod sync, 60 to 90 s) for its token.")
	fs.BoolVar(&c.secrets, "secrets", false, "The Secrets mode: also serve volumes that read Secrets (attribute secret, and secret sources in sources), read as the pod (needs --read-as=pod), "+
		"each on a tmpfs the driver mounts at its target path so that no Secret byte reaches the node's disk. Mounting needs a privileged container with Bidirectional mount propagation (the chart's csi.secrets.enabled).")
	fs.BoolVar(&c.profiling, "profiling", false, "Also serve Go's CPU, heap and goroutine profiles at /debug/pprof/ on --http-address (plain HTTP, unauthenticated: keep the address local); without it the driver does not sample its heap.")
	fs.BoolVar(&c.checkAccess, "check-access", false, "Beyond the kubelet: publish a volume only if the pod's service account may get its ConfigMap (a SubjectAccessReview per publish; needs create on subjectaccessreviews).")
	fs.Float32Var(&c.qps, "kube-api-qps", 50, "Requests per second to the apiserver.")
	fs.IntVar(&c.burst, "kube-api-burst", 100, "Burst of requests to the apiserver.")
	fs.Float32Var(&c.eventQPS, agent.FlagEventQPS, 50, "Events posted per second, on a client of their own, as the kubelet's --event-qps; 0 is no limit.")
	fs.IntVar(&c.eventBurst, agent.FlagEventBurst, 100, "Burst of events posted, as the kubelet's --event-burst.")
}

func (c *csiConfig) validate() error {
	var errs []error
	if c.nodeName == "" {
		errs = append(errs, errors.New("--node-name is empty: set it, or $NODE_NAME (the DaemonSet sets it from spec.nodeName)"))
	}
	if c.stateDir == "" || c.kubeletRootDir == "" {
		errs = append(errs, errors.New("--state-dir and --kubelet-root-dir must be set"))
	}
	if !filepath.IsAbs(c.endpointPath()) {
		errs = append(errs, fmt.Errorf("--endpoint %q: want an absolute path", c.endpoint))
	}
	if c.tokenDir != "" && c.readAs != csidriver.ReadAsPod {
		errs = append(errs, errors.New("--token-dir needs --read-as=pod: it keeps the pods' tokens, which the driver receives only when it reads as the pods"))
	}
	if c.tokenDir != "" && !filepath.IsAbs(c.tokenDir) {
		errs = append(errs, fmt.Errorf("--token-dir %q: want an absolute path", c.tokenDir))
	}
	if c.secrets && c.readAs != csidriver.ReadAsPod {
		errs = append(errs, errors.New("--secrets needs --read-as=pod: the driver reads a Secret only as the pod whose volume names it, never as itself"))
	}
	if c.qps <= 0 || c.burst <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive, got %v and %d", c.qps, c.burst))
	}
	if c.eventQPS < 0 || c.eventBurst <= 0 {
		errs = append(errs, fmt.Errorf("--event-qps must be at least 0 and --event-burst positive, got %v and %d", c.eventQPS, c.eventBurst))
	}
	return errors.Join(errs...)
}

// endpointPath is --endpoint, or by default the socket under the kubelet's
// plugins directory.
func (c *csiConfig) endpointPath() string {
	if c.endpoint != "" {
		return c.endpoint
	}
	return filepath.Join(c.kubeletRootDir, "plugins", c.driverName, "csi.sock")
}

func runCSI(args []string, stdout io.Writer) error {
	fs := newFlagSet("csi", "Serve pods' csi volumes of driver "+csidriver.DefaultDriverName+": a CSI node plugin that writes a ConfigMap's files and keeps them current within a second of each change (docs/csi.md).", stdout)
	var cfg csiConfig
	cfg.addFlags(fs)
	if err := parseDaemonFlags(fs, args, cfg.validate); err != nil {
		return err
	}
	defer klog.Flush()
	// Heap profiling as the agent's, GOGC the driver's own (runtime.go).
	heapProfiling := setHeapProfiling(cfg.profiling, os.Getenv)
	gcPercent := setGCPercent(os.Getenv, driverGCPercent)
	restConfig, err := daemon.RESTConfig(cfg.kubeconfig, "")
	if err != nil {
		return err
	}
	ctx, stop := daemon.SignalContext()
	defer stop()
	logger := klog.Background()
	logger.Info("Starting nodeagent's CSI driver", "version", version.Get().String(), "gcPercent", gcPercent, "heapProfiling", heapProfiling)
	fs.VisitAll(func(f *pflag.Flag) { logger.Info("Flag", "name", f.Name, "value", f.Value.String()) })
	return serveCSI(klog.NewContext(ctx, logger), restConfig, cfg)
}

// csiWatchesOpts is the one metric of the csi command's own; the rest are
// the agent's volume metrics (agent.NewVolumeMetrics), which the driver's
// volume manager feeds.
var csiWatchesOpts = prometheus.GaugeOpts{
	Name: "nodeagent_csi_configmap_watches",
	Help: "ConfigMap watches the CSI driver holds open: one per ConfigMap its volumes on this node read.",
}

// serveCSI builds the driver, its events and its HTTP endpoints, and runs
// them until ctx ends.
func serveCSI(ctx context.Context, restConfig *rest.Config, cfg csiConfig) error {
	rc := rest.CopyConfig(restConfig)
	rc.QPS, rc.Burst = cfg.qps, cfg.burst
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	rc.UserAgent = fmt.Sprintf("nodeagent-csi/%s (node %s)", version.Get().Version, cfg.nodeName)
	// Uncompressed responses: a watch's gzip reader keeps a 32 KiB window
	// and its buffers for the watch's life, about 41 KiB per watch, most
	// of the driver's heap at 1,000 watches (make csi-load's profile), to
	// save bytes of small objects on the node's own link to the apiserver.
	rc.DisableCompression = true
	client, err := coreclient.NewForConfig(rc)
	if err != nil {
		return err
	}
	eventClient, err := coreclient.NewForConfig(agent.EventsRESTConfig(rc, cfg.eventQPS, cfg.eventBurst))
	if err != nil {
		return fmt.Errorf("creating the events client: %w", err)
	}
	events := record.NewBroadcaster()
	events.StartRecordingToSink(eventClient.EventSink())
	defer events.Shutdown()

	metrics := agent.NewVolumeMetrics(version.Get().Version)
	metrics.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	opts := csidriver.Options{
		DriverName: cfg.driverName, NodeName: cfg.nodeName, Endpoint: cfg.endpointPath(), StateDir: cfg.stateDir,
		ReadAs: cfg.readAs, Secrets: cfg.secrets, TokenDir: cfg.tokenDir,
		ConfigMaps: func(namespace string) configmapcache.ConfigMapClient { return client.ConfigMaps(namespace) },
		ClientAs:   clientAs(rc),
		Events:     events.NewRecorder(coreclient.Scheme, corev1.EventSource{Component: "nodeagent-csi", Host: cfg.nodeName}),
		Recorder:   metrics,
	}
	if cfg.register {
		opts.RegistrationDir = filepath.Join(cfg.kubeletRootDir, "plugins_registry")
	}
	if cfg.checkAccess {
		reviewer, err := csidriver.NewAccessReviewer(rc)
		if err != nil {
			return err
		}
		opts.Access = reviewer
	}
	driver, err := csidriver.New(opts)
	if err != nil {
		return err
	}
	metrics.Registry.MustRegister(prometheus.NewGaugeFunc(csiWatchesOpts, func() float64 { return float64(driver.Watching()) }))
	g, ctx := errgroup.WithContext(ctx)
	if cfg.httpAddress != "" {
		listener, err := net.Listen("tcp", cfg.httpAddress)
		if err != nil {
			return fmt.Errorf("listening on --http-address %s: %w", cfg.httpAddress, err)
		}
		server := &http.Server{Handler: csiHandler(driver, metrics.Registry, cfg.register, cfg.profiling), ReadHeaderTimeout: 10 * time.Second}
		g.Go(func() error { return daemon.Serve(ctx, server, listener) })
	}
	g.Go(func() error { return driver.Run(ctx) })
	return g.Wait()
}

// clientAs makes clients that authenticate with a pod's token alone: the
// apiserver's address and CA of rc, none of the driver's own credentials.
func clientAs(rc *rest.Config) csidriver.ClientAs {
	return func(token, namespace string) (csidriver.PodAPI, error) {
		c := rest.AnonymousClientConfig(rc)
		c.BearerToken, c.DisableCompression = token, rc.DisableCompression
		client, err := coreclient.NewForConfig(c)
		if err != nil {
			return csidriver.PodAPI{}, err
		}
		return csidriver.PodAPI{ConfigMaps: client.ConfigMaps(namespace), Secrets: client.Secrets(namespace)}, nil
	}
}

// csiHandler serves the driver's HTTP endpoints (agent.Endpoints): ready
// once the recorded volumes are served again and, when registering, the
// kubelet has accepted the driver.
func csiHandler(driver *csidriver.Driver, registry *prometheus.Registry, register, profiling bool) http.Handler {
	return agent.Endpoints{
		Registry:  registry,
		Profiling: profiling,
		Ready: func() error {
			switch {
			case !driver.Ready():
				return errors.New("restoring the published volumes")
			case register && !driver.Registered():
				return errors.New("not registered with the kubelet yet")
			}
			return nil
		},
		Volumes: func() any {
			return map[string]any{"volumes": driver.Volumes(), "configMapWatches": driver.Watching()}
		},
	}.Handler()
}
