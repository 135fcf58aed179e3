package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/internal/daemon"
	"github.com/nodeagent-io/nodeagent/internal/version"
	"github.com/nodeagent-io/nodeagent/pkg/agent"
)

func runAgent(args []string, stdout io.Writer) error {
	fs := newFlagSet("run", "Run the node agent: keep the ConfigMap volumes of this node's pods on disk, as the kubelet does.", stdout)
	cfg := agent.DefaultConfig()
	var kubeconfig string
	fs.StringVar(&kubeconfig, "kubeconfig", "", kubeconfigHelp)
	cfg.NodeName = defaultNodeName()
	cfg.AddFlags(fs)
	if err := parseDaemonFlags(fs, args, func() error { return cfg.Validate() }); err != nil { // cfg as parsed
		return err
	}
	defer klog.Flush()
	heapProfiling := setHeapProfiling(cfg.Profiling, os.Getenv)

	restConfig, err := daemon.RESTConfig(kubeconfig, "")
	if err != nil {
		return err
	}
	a, err := agent.New(restConfig, cfg)
	if err != nil {
		return err
	}
	// The process is this one agent's: its goroutines, memory and open
	// files are the agent's, so /metrics shows them (compare, which runs many
	// agents in one process, does not).
	a.Metrics.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	gcPercent := setGCPercent(os.Getenv, agentGCPercent)

	ctx, stop := daemon.SignalContext()
	defer stop()
	logger := klog.Background()
	logger.Info("Starting nodeagent", "version", version.Get().String(), "gcPercent", gcPercent, "heapProfiling", heapProfiling)
	fs.VisitAll(func(f *pflag.Flag) {
		logger.Info("Flag", "name", f.Name, "value", f.Value.String())
	})
	return a.Run(klog.NewContext(ctx, logger))
}

// parseDaemonFlags adds the logging flags (daemon.AddLoggingFlags) to fs,
// parses args, refuses positional arguments, validates, and sets up
// logging; the caller defers klog.Flush.
func parseDaemonFlags(fs *pflag.FlagSet, args []string, validate func() error) error {
	logging := daemon.AddLoggingFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := validate(); err != nil {
		return err
	}
	return logging.SetUp()
}

func defaultNodeName() string {
	if name := os.Getenv("NODE_NAME"); name != "" {
		return name
	}
	host, _ := os.Hostname()
	return strings.ToLower(host)
}

// kubeconfigHelp is the --kubeconfig flag's help (daemon.RESTConfig).
const kubeconfigHelp = "Path to a kubeconfig. Empty: $KUBECONFIG, else ~/.kube/config, else the pod's service account, as kubectl finds the cluster."
