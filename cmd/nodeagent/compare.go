package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/pkg/compare"
)

func runCompare(args []string, stdout io.Writer) error {
	fs := newFlagSet("compare", "Measure the ConfigMap GET load of the kubelet's cache before and after kubernetes#120255, at the apiserver and at etcd, on a real apiserver.", stdout)
	s := compare.DefaultScenario()
	var kubeconfig, modes, outputDir, namespace string
	var keep bool
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Cluster to measure. Empty: start a throwaway local etcd and kube-apiserver (built by `make controlplane`).")
	fs.IntVar(&s.Nodes, "nodes", s.Nodes, "Simulated nodes: Node objects, each served by its own agent in this process.")
	fs.IntVar(&s.PodsPerNode, "pods-per-node", s.PodsPerNode, "Pods bound to each node.")
	fs.IntVar(&s.ConfigMapsPerPod, "configmaps-per-pod", s.ConfigMapsPerPod, "ConfigMap volumes per pod.")
	fs.IntVar(&s.SharedConfigMaps, "shared-configmaps", s.SharedConfigMaps, "Draw every pod's ConfigMaps from one pool of this many. 0: each pod has its own.")
	fs.DurationVar(&s.SyncFrequency, "sync-frequency", s.SyncFrequency, "The agents' --sync-frequency (S).")
	fs.DurationVar(&s.TTL, "ttl", s.TTL, "TTL written to every Node's node.alpha.kubernetes.io/ttl annotation, whole seconds.")
	fs.DurationVar(&s.PhaseDuration, "phase-duration", s.PhaseDuration, "How long each mode is measured, after its warm-up.")
	fs.DurationVar(&s.SampleInterval, "sample-interval", s.SampleInterval, "How often GET/s is sampled for the chart and the progress line.")
	fs.StringVar(&modes, "modes", "every-sync,first-reference,watch", "Comma-separated modes, measured in this order: every-sync (before #120255), first-reference (after), watch, get.")
	fs.StringVar(&outputDir, "output-dir", "_output/compare", "Where report.json, report.md, chart.svg, chart.png and agents.log are written.")
	fs.StringVar(&namespace, "namespace", compare.DefaultNamespace, "Namespace for the run's pods and ConfigMaps; its simulated Nodes are named <namespace>-node-NNN.")
	fs.BoolVar(&keep, "keep", false, "Leave the created nodes, pods and ConfigMaps in place.")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlag(klogFlags.Lookup("v"))
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if s.Modes, err = compare.ParseModes(modes); err != nil {
		return fmt.Errorf("--modes: %w", err)
	}
	if err := s.Validate(); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := compare.Options{Scenario: s, OutputDir: outputDir, Progress: os.Stderr, Keep: keep, Namespace: namespace}
	if kubeconfig != "" {
		if opts.RESTConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
			return fmt.Errorf("loading --kubeconfig: %w", err)
		}
		opts.APIServer = opts.RESTConfig.Host
	} else {
		fmt.Fprintln(os.Stderr, "Starting a local etcd and kube-apiserver...")
		cp, err := controlplane.Start(ctx, controlplane.Options{})
		if err != nil {
			return err
		}
		defer cp.Stop()
		fmt.Fprintf(os.Stderr, "Local control plane ready in %.1fs at %s.\n", cp.StartupDuration.Seconds(), cp.APIServerURL)
		opts.RESTConfig = cp.RESTConfig()
		opts.APIServer = "local control plane (etcd " + controlplane.EtcdVersion + ", kube-apiserver " + controlplane.KubernetesVersion + ")"
	}

	start := time.Now()
	report, runErr := compare.Run(ctx, opts)
	if report != nil && len(report.Phases) > 0 {
		fmt.Fprintln(stdout)
		report.WriteTable(stdout)
		abs, _ := filepath.Abs(outputDir)
		fmt.Fprintf(stdout, "\nReport: %s/report.md (report.json, chart.svg, chart.png); took %s.\n", abs, time.Since(start).Round(time.Second))
	}
	if runErr != nil && errors.Is(runErr, context.Canceled) {
		return fmt.Errorf("interrupted; the report holds what was measured until then")
	}
	return runErr
}
