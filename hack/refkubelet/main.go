// Command refkubelet runs the real kubelet of one pinned Kubernetes release
// against an apiserver, with a fake container runtime, so that its
// ConfigMap traffic and the files it writes can be set beside nodeagent's.
//
// It is wired the way kubemark's hollow node is: the kubelet's own code
// from k8s.io/kubernetes (pod workers, volume manager, ConfigMap manager,
// node status, lease), a fake CRI runtime and image service served in this
// process, stub cgroups and cAdvisor, and a fake mounter, so that volumes
// are real directories under --root-dir and nothing touches the host.
//
// One source, one module file per release: go.mod pins v1.37 and
// v1.28.mod pins v1.28, the last release before kubernetes#120255; the
// build tag refkubelet_v1_28 selects the code that differs between them.
// build.sh builds both (`make refkubelet`).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
)

// maxRootDir leaves room under the root directory for the kubelet's
// longest unix socket path, pod-resources/<10 digits>, within 108 bytes.
const maxRootDir = 80

// settings are refkubelet's flags: what nodeagent compare and its tests vary.
type settings struct {
	nodeName      string
	kubeconfig    string
	rootDir       string
	syncFrequency time.Duration
	strategy      string
	qps           float32
	burst         int
	maxPods       int
	// port and clientCAFile, when set, serve the kubelet's API (its
	// /configz among it) on that port, authenticating the apiserver's
	// client certificate against the CA, as a kubelet does.
	port         int
	clientCAFile string
	// featureGates are the kubelet's --feature-gates.
	featureGates map[string]bool
}

func main() {
	var s settings
	fs := pflag.NewFlagSet("refkubelet", pflag.ExitOnError)
	fs.StringVar(&s.nodeName, "node-name", "", "Name of the Node this kubelet runs as (required). It registers the Node if it does not exist.")
	fs.StringVar(&s.kubeconfig, "kubeconfig", "", "Kubeconfig with this node's client identity (required).")
	fs.StringVar(&s.rootDir, "root-dir", "", "The kubelet's root directory: pod volumes are written under <root-dir>/pods (required).")
	fs.DurationVar(&s.syncFrequency, "sync-frequency", time.Minute, "The kubelet's syncFrequency: how often each running pod is synced.")
	fs.StringVar(&s.strategy, "configmap-change-detection-strategy", "Cache", "The kubelet's configMapAndSecretChangeDetectionStrategy: Get, Cache or Watch.")
	fs.Float32Var(&s.qps, "kube-api-qps", 50, "The kubelet's kubeAPIQPS.")
	fs.IntVar(&s.burst, "kube-api-burst", 100, "The kubelet's kubeAPIBurst.")
	fs.IntVar(&s.maxPods, "max-pods", 110, "The kubelet's maxPods.")
	fs.IntVar(&s.port, "port", 0, "Serve the kubelet's API (/configz, /pods, ...) on this port of every address, announced in the Node's daemonEndpoints, so that the apiserver's node proxy reaches it. 0: no server.")
	fs.StringVar(&s.clientCAFile, "client-ca-file", "", "With --port: the CA of the client certificates the kubelet's API accepts (the apiserver's --kubelet-client-certificate); requests are then authorized by the apiserver (webhook), as a kubelet's are.")
	fs.Var(cliflag.NewMapStringBool(&s.featureGates), "feature-gates", "The kubelet's featureGates, NAME=true|false separated by commas.")
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	_ = fs.Parse(os.Args[1:])

	if err := s.validate(); err != nil {
		fmt.Fprintf(os.Stderr, "refkubelet: %v\n", err)
		os.Exit(2)
	}
	// The kubelet takes a relative root directory as relative to /.
	if abs, err := filepath.Abs(s.rootDir); err == nil {
		s.rootDir = abs
	}
	if len(s.rootDir) > maxRootDir {
		fmt.Fprintf(os.Stderr, "refkubelet: --root-dir %s is %d bytes long; the kubelet's unix sockets under it must fit in 108 bytes: use one of at most %d\n", s.rootDir, len(s.rootDir), maxRootDir)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	stopRuntime, err := run(ctx, s)
	if err != nil {
		klog.ErrorS(err, "refkubelet failed")
		klog.Flush()
		os.Exit(1)
	}
	<-ctx.Done()
	stopRuntime()
	// The kubelet has no orderly stop; its state is on disk and in the
	// API, so exiting is how a kubelet ends.
	klog.InfoS("refkubelet stopping", "node", s.nodeName)
	klog.Flush()
}

func (s settings) validate() error {
	var errs []error
	if s.nodeName == "" {
		errs = append(errs, errors.New("--node-name is required"))
	}
	if s.kubeconfig == "" {
		errs = append(errs, errors.New("--kubeconfig is required"))
	}
	if s.rootDir == "" {
		errs = append(errs, errors.New("--root-dir is required"))
	}
	if s.port < 0 || s.port > 65535 {
		errs = append(errs, fmt.Errorf("--port must be a port number, got %d", s.port))
	}
	if s.port > 0 && s.clientCAFile == "" {
		errs = append(errs, errors.New("--port needs --client-ca-file: the kubelet's API authenticates the apiserver by its client certificate"))
	}
	if s.syncFrequency <= 0 {
		errs = append(errs, fmt.Errorf("--sync-frequency must be positive, got %s", s.syncFrequency))
	}
	switch kubeletconfig.ResourceChangeDetectionStrategy(s.strategy) {
	case kubeletconfig.GetChangeDetectionStrategy, kubeletconfig.TTLCacheChangeDetectionStrategy, kubeletconfig.WatchChangeDetectionStrategy:
	default:
		errs = append(errs, fmt.Errorf("--configmap-change-detection-strategy must be Get, Cache or Watch, got %q", s.strategy))
	}
	return errors.Join(errs...)
}

// run starts the kubelet and returns once it runs, with what stops its
// fake runtime.
func run(ctx context.Context, s settings) (stop func(), err error) {
	if err := os.MkdirAll(s.rootDir, 0o750); err != nil {
		return nil, err
	}
	// The kubelet's own start sets the process's gates from its
	// configuration; RunKubelet leaves that to its caller.
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(s.featureGates); err != nil {
		return nil, fmt.Errorf("--feature-gates: %w", err)
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading --kubeconfig: %w", err)
	}
	restConfig.QPS, restConfig.Burst = s.qps, s.burst
	restConfig.ContentType = "application/vnd.kubernetes.protobuf"
	restConfig.UserAgent = "refkubelet/" + s.nodeName
	client, err := clientset.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	// The kubelet's heartbeats (node status, lease) bypass its rate
	// limiter and time out within the lease, as in the kubelet's server.
	heartbeatConfig := rest.CopyConfig(restConfig)
	heartbeatConfig.QPS, heartbeatConfig.Timeout = -1, 10*time.Second
	heartbeatClient, err := clientset.NewForConfig(heartbeatConfig)
	if err != nil {
		return nil, err
	}
	server, err := kubeletServer(s)
	if err != nil {
		return nil, err
	}
	// Events go through a client of their own, with the kubelet's event
	// rate limit (eventRecordQPS, eventBurst: 50 and 100 by default).
	eventConfig := rest.CopyConfig(restConfig)
	eventConfig.QPS, eventConfig.Burst = float32(server.EventRecordQPS), int(server.EventBurst)
	if server.EventRecordQPS == 0 {
		eventConfig.QPS = -1 // the kubelet's 0: no limit
	}
	eventClient, err := clientset.NewForConfig(eventConfig)
	if err != nil {
		return nil, err
	}
	return startKubelet(ctx, server, client, heartbeatClient, eventClient)
}

// kubeletServer is the kubelet's flags and configuration: its defaults,
// with what refkubelet's flags set, and what a kubelet without a host
// needs (no cgroups, no static pods, and no server unless --port).
func kubeletServer(s settings) (*options.KubeletServer, error) {
	flags := options.NewKubeletFlags()
	flags.RootDirectory = s.rootDir
	flags.CertDirectory = s.rootDir + "/pki"
	flags.HostnameOverride = s.nodeName
	flags.MinimumGCAge.Duration = time.Minute
	flags.MaxContainerCount = 100
	flags.MaxPerPodContainerCount = 2
	config, err := options.NewKubeletConfiguration()
	if err != nil {
		return nil, err
	}
	config.SyncFrequency.Duration = s.syncFrequency
	config.ConfigMapAndSecretChangeDetectionStrategy = kubeletconfig.ResourceChangeDetectionStrategy(s.strategy)
	config.KubeAPIQPS, config.KubeAPIBurst = int32(s.qps), int32(s.burst)
	config.MaxPods = int32(s.maxPods)
	config.ProviderID = "refkubelet://" + s.nodeName
	config.FeatureGates = s.featureGates
	config.RegisterNode = true
	config.EnableServer = s.port > 0
	if config.EnableServer {
		// As kubeadm configures a kubelet: no anonymous requests,
		// client certificates and bearer tokens authenticated, and every
		// request authorized by the apiserver (webhook); the serving
		// certificate is self-signed under CertDirectory, which the
		// apiserver accepts without --kubelet-certificate-authority.
		config.Port = int32(s.port)
		config.Authentication.X509.ClientCAFile = s.clientCAFile
		config.Authentication.Anonymous.Enabled = false
		config.Authentication.Webhook.Enabled = true
		config.Authorization.Mode = kubeletconfig.KubeletAuthorizationModeWebhook
	}
	config.ReadOnlyPort = 0
	config.HealthzPort = 0
	config.StaticPodPath, config.StaticPodURL = "", ""
	config.CgroupsPerQOS, config.CgroupRoot = false, ""
	config.EnforceNodeAllocatable = nil
	// A cluster's DNS, as kubeadm configures it (nothing answers there;
	// the fake runtime never resolves). Without one the kubelet posts a
	// MissingClusterDNS warning at every sync of every pod, which uses up
	// the pod's event budget (25, then one per 5 minutes) and drops its
	// later FailedMount events.
	config.ClusterDNS, config.ClusterDomain = []string{"10.96.0.10"}, "cluster.local"
	config.EnableControllerAttachDetach = false
	config.ProtectKernelDefaults = false
	config.MaxOpenFiles = 1024
	config.SerializeImagePulls = true
	config.NodeStatusUpdateFrequency.Duration = 10 * time.Second
	config.NodeStatusReportFrequency.Duration = 5 * time.Minute
	config.VolumeStatsAggPeriod.Duration = time.Minute
	return &options.KubeletServer{KubeletFlags: *flags, KubeletConfiguration: *config}, nil
}
