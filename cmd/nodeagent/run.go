package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/internal/version"
	"github.com/nodeagent-io/nodeagent/pkg/agent"
)

func runAgent(args []string, stdout io.Writer) error {
	fs := newFlagSet("run", "Run the node agent: keep the ConfigMap volumes of this node's pods on disk, as the kubelet does.", stdout)
	cfg := agent.DefaultConfig()
	var kubeconfig string
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Path to a kubeconfig. Empty: the in-cluster service account.")
	cfg.NodeName = defaultNodeName()
	cfg.AddFlags(fs)
	if err := parseDaemonFlags(fs, args, func() error { return cfg.Validate() }); err != nil { // cfg as parsed
		return err
	}
	defer klog.Flush()
	heapProfiling := setHeapProfiling(cfg.Profiling, os.Getenv)

	restConfig, err := loadRESTConfig(kubeconfig)
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

	gcPercent := setGCPercent(os.Getenv)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	logger := klog.Background()
	logger.Info("Starting nodeagent", "version", version.Get().String(), "gcPercent", gcPercent, "heapProfiling", heapProfiling)
	fs.VisitAll(func(f *pflag.Flag) {
		logger.Info("Flag", "name", f.Name, "value", f.Value.String())
	})
	return a.Run(klog.NewContext(ctx, logger))
}

// parseDaemonFlags adds the logging flags of a long-running command (run,
// csi, webhook) to fs, parses args, refuses positional arguments, validates, and
// sets up logging; the caller defers klog.Flush.
func parseDaemonFlags(fs *pflag.FlagSet, args []string, validate func() error) error {
	var logFormat string
	fs.StringVar(&logFormat, "logging-format", "text", "Log format: text or json.")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	// Of klog's many flags, only verbosity is worth a user's attention;
	// the process always logs to stderr.
	for _, name := range []string{"v", "vmodule"} {
		fs.AddGoFlag(klogFlags.Lookup(name))
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := validate(); err != nil {
		return err
	}
	return setUpLogging(logFormat, klogFlags)
}

func defaultNodeName() string {
	if name := os.Getenv("NODE_NAME"); name != "" {
		return name
	}
	host, _ := os.Hostname()
	return strings.ToLower(host)
}

func loadRESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig given and not running in a cluster: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading --kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

// setUpLogging sends klog's output as text (klog's own format) or as JSON
// lines through log/slog, honouring -v in both.
func setUpLogging(format string, klogFlags *flag.FlagSet) error {
	switch format {
	case "text":
		return nil
	case "json":
		verbosity := 0
		if f := klogFlags.Lookup("v"); f != nil {
			fmt.Sscan(f.Value.String(), &verbosity)
		}
		handler := slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.Level(-verbosity)})
		klog.SetLogger(logr.FromSlogHandler(handler))
		return nil
	default:
		return fmt.Errorf("--logging-format: unknown value %q; choose text or json", format)
	}
}
