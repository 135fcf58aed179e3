//go:build !agentonly

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
	"slices"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/pkg/compare"
	"github.com/nodeagent-io/nodeagent/pkg/compare/daemonset"
	"github.com/nodeagent-io/nodeagent/pkg/compare/inprocess"
	"github.com/nodeagent-io/nodeagent/pkg/compare/processes"
)

// compareFlags are the command line of `nodeagent compare`, beyond the
// scenario's own.
type compareFlags struct {
	kubeconfig, kubeContext, modes, podPhases string
	daemonSet                                 daemonset.Options
	agentProcesses                            bool
	agentBinary, metricsAddress               string
}

func runCompare(args []string, stdout io.Writer) error {
	fs := newFlagSet("compare", "Measure the ConfigMap GET load of the kubelet's cache before and after kubernetes#120255, at the apiserver and at etcd, on a real apiserver.", stdout)
	s := compare.DefaultScenario()
	opts := compare.Options{Progress: os.Stderr}
	var flags compareFlags
	defineCompareFlags(fs, &s, &opts, &flags)
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlag(klogFlags.Lookup("v"))
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkCompareFlags(fs, &s, &flags); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts.Scenario = s
	stopControlPlane, err := connect(ctx, &opts, flags)
	if err != nil {
		return err
	}
	defer stopControlPlane()

	start := time.Now()
	report, runErr := compare.Run(ctx, opts)
	if report != nil && len(report.Phases) > 0 {
		fmt.Fprintln(stdout)
		report.WriteTable(stdout)
		abs, _ := filepath.Abs(opts.OutputDir)
		fmt.Fprintf(stdout, "\nReport: %s/report.md (report.json, chart.svg, chart.png); took %s.\n", abs, time.Since(start).Round(time.Second))
	}
	if runErr != nil && errors.Is(runErr, context.Canceled) {
		return fmt.Errorf("interrupted; the report holds what was measured until then")
	}
	return runErr
}

// defineCompareFlags defines compare's flags on fs, into s, opts and flags.
func defineCompareFlags(fs *pflag.FlagSet, s *compare.Scenario, opts *compare.Options, flags *compareFlags) {
	fs.StringVar(&flags.kubeconfig, "kubeconfig", "", "Cluster to measure. Empty: with --daemonset, the cluster kubectl would use ($KUBECONFIG or ~/.kube/config, its current context); without, start a throwaway local etcd, kube-apiserver and kube-controller-manager (built by 'make controlplane').")
	fs.StringVar(&flags.kubeContext, "context", "", "The kubeconfig context to use. Empty: its current context.")
	fs.StringVar(&flags.daemonSet.DaemonSet, "daemonset", "", "namespace/name of nodeagent deployed as a DaemonSet (e.g. nodeagent/nodeagent): measure its agents on the real nodes of the cluster kubectl would use (or --kubeconfig's), switching it between the modes by rollouts and restoring it at the end. Empty: simulated nodes, agents in this process.")
	fs.StringVar(&flags.daemonSet.NodeSelector, "node-selector", "", "With --daemonset: a label selector (e.g. pool=general) that limits the run's pods to the matching nodes among the DaemonSet's.")
	fs.StringVar(&opts.PodImage, "pod-image", compare.DefaultPodImage, "With --daemonset: image of the run's pods, which the nodes' kubelets start; use one the nodes already have.")
	fs.DurationVar(&flags.daemonSet.RolloutTimeout, "rollout-timeout", 5*time.Minute, "With --daemonset: how long each rollout of the DaemonSet may take.")
	fs.IntVar(&s.Nodes, "nodes", s.Nodes, "Simulated nodes: Node objects, each served by its own agent in this process. With --daemonset: how many of its nodes get the run's pods (default all).")
	fs.IntVar(&s.PodsPerNode, "pods-per-node", s.PodsPerNode, "Pods bound to each node.")
	fs.IntVar(&s.ConfigMapsPerPod, "configmaps-per-pod", s.ConfigMapsPerPod, "ConfigMap volumes per pod.")
	fs.IntVar(&s.SharedConfigMaps, "shared-configmaps", s.SharedConfigMaps, "Draw every pod's ConfigMaps from one pool of this many. 0: each pod has its own.")
	fs.BoolVar(&s.ServiceAccountVolume, "service-account-volume", s.ServiceAccountVolume, "Let the cluster's ServiceAccount admission plugin give every pod its kube-api-access volume, whose kube-root-ca.crt every sync reads, as on any real cluster. false: the pods set automountServiceAccountToken: false.")
	fs.DurationVar(&s.SyncFrequency, "sync-frequency", s.SyncFrequency, "The agents' --sync-frequency (S). With --daemonset: set on the DaemonSet only if given; otherwise its own is kept.")
	fs.DurationVar(&s.TTL, "ttl", s.TTL, "TTL written to every Node's node.alpha.kubernetes.io/ttl annotation, whole seconds. Not with --daemonset: the cluster's TTL is read from its nodes.")
	fs.DurationVar(&s.PhaseDuration, "phase-duration", s.PhaseDuration, "How long each mode is measured, after its warm-up. With --daemonset the default is four mean sync intervals, at least 1m.")
	fs.Float64Var(&s.UpdateRate, "update-rate", 0, "ConfigMap updates per second, round robin over the run's ConfigMaps, during each measured window; each phase then reports how long updates take to reach the disk of every pod that mounts them (p50, p99, max), beside the kubelet's behaviour. Not with --daemonset. 0: no updates.")
	fs.DurationVar(&s.SampleInterval, "sample-interval", s.SampleInterval, "How often GET/s is sampled for the chart and the progress line.")
	fs.StringVar(&flags.modes, "modes", "every-sync,first-reference,watch", "Comma-separated modes, measured in this order: every-sync (before #120255), first-reference (after), watch (remount-on-change), watch-at-sync (changes at each pod's next sync), get; and the real kubelet on the same pods, one process per node: kubelet-v1.28 (before #120255), kubelet-v1.36 (after), kubelet-v1.36-watch (built by 'make refkubelet'; local control plane only). With --daemonset the default leaves out watch, which needs deploy/overlays/watch's RBAC.")
	fs.StringVar(&flags.podPhases, "pod-phases", compare.PhasesMixed.String(), "Where the pods' syncs are when each window opens. mixed: compare updates every pod once or twice in the two sync periods before the window (an annotation), on a schedule that leaves each pod's syncs out of step with its node's other pods', as on a node whose pods started at different times: the steady state that the model and analyze predict. together: the window opens right after the agents start, when each node's pods sync together, as after a restart of every kubelet.")
	fs.StringVar(&opts.OutputDir, "output-dir", "_output/compare", "Where report.json, report.md, chart.svg, chart.png and agents.log are written.")
	fs.StringVar(&opts.Namespace, "namespace", compare.DefaultNamespace, "Namespace for the run's pods and ConfigMaps; its simulated Nodes are named <namespace>-node-NNN.")
	fs.BoolVar(&opts.Keep, "keep", false, "Leave the created nodes, pods and ConfigMaps in place.")
	fs.StringVar(&flags.metricsAddress, "metrics-address", "", "Serve the metrics of the agents this process runs at http://<address>/metrics, each series labelled with its node (node=\"<name>\"), for a Prometheus to scrape with deploy/prometheus's rules (docs/monitoring.md). Not with --daemonset or --agent-processes. Empty: not served.")
	fs.StringVar(&opts.ProfileDir, "profile-dir", "", "Write a CPU profile of each measured window (cpu-<mode>.pprof) and a heap profile at its end (heap-<mode>.pprof) of this process, whose agents they show, into this directory; read them with 'go tool pprof'.")
	fs.BoolVar(&flags.agentProcesses, "agent-processes", false, "Run each simulated node's agent as its own 'nodeagent run' process, as on a real node, so that the CPU time and memory reported are the agents' alone (read from /proc), not shared with this process's own work. Local control plane only.")
	fs.StringVar(&flags.agentBinary, "agent-binary", "", "With --agent-processes: the nodeagent binary each node runs. Empty: the agent-only build beside this binary (nodeagent-agent, which make build writes and the image ships), else this binary.")
}

// checkCompareFlags checks what the flags alone decide, and adjusts the
// defaults of a DaemonSet run, before anything is started or connected.
func checkCompareFlags(fs *pflag.FlagSet, s *compare.Scenario, flags *compareFlags) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if flags.daemonSet.DaemonSet != "" {
		if err := daemonSetDefaults(fs, s, flags); err != nil {
			return err
		}
	} else {
		for _, name := range []string{"node-selector", "pod-image", "rollout-timeout"} {
			if fs.Changed(name) {
				return fmt.Errorf("--%s needs --daemonset: it applies to the deployed agents' nodes only", name)
			}
		}
	}
	if flags.agentBinary != "" && !flags.agentProcesses {
		return errors.New("--agent-binary needs --agent-processes: in-process agents are this binary's")
	}
	var err error
	if s.Modes, err = compare.ParseModes(flags.modes); err != nil {
		return fmt.Errorf("--modes: %w", err)
	}
	if s.PodPhases, err = compare.ParsePodPhases(flags.podPhases); err != nil {
		return err
	}
	if flags.daemonSet.DaemonSet != "" {
		// The DaemonSet's fleet fills in the nodes, S and the window from
		// the cluster, and validates the whole scenario then.
		return s.ValidateFlags()
	}
	fitToMachine(fs, s)
	return s.ValidateOnThisMachine()
}

// fitToMachine gives a large run that leaves --sync-frequency unset the
// kubelet's default S of one minute, or the shortest whole number of
// minutes above it that this machine serves (the scenario's limits), and,
// unless --phase-duration is set, a window of two mean sync intervals:
// where the demo's S = 5 s would send more GETs than one machine serves,
// the user asked for the scale, not for the demo's pace. The ratios
// between modes, which are what compare shows, do not depend on S.
func fitToMachine(fs *pflag.FlagSet, s *compare.Scenario) {
	if fs.Changed("sync-frequency") || s.ValidateOnThisMachine() == nil {
		return
	}
	for minutes := 1; minutes <= maxFittedSyncMinutes; minutes++ {
		tried := *s
		tried.SyncFrequency = time.Duration(minutes) * time.Minute
		if !fs.Changed("phase-duration") {
			tried.PhaseDuration = compare.MinPhaseDuration(tried.SyncFrequency)
		}
		if tried.ValidateOnThisMachine() != nil {
			continue
		}
		what, shorter := " (the kubelet's default)", s.SyncFrequency.String()
		if minutes > 1 {
			what, shorter = "", "the kubelet's default 1m0s"
		}
		fmt.Fprintf(os.Stderr, "Using --sync-frequency %s%s and --phase-duration %s for %d pods: at %s, every-sync would send more GETs than this machine serves.\n",
			tried.SyncFrequency, what, tried.PhaseDuration, s.Nodes*s.PodsPerNode, shorter)
		*s = tried
		return
	}
	// Validate will say what to change.
}

// maxFittedSyncMinutes bounds fitToMachine's search: a longer S makes
// each phase longer than an hour.
const maxFittedSyncMinutes = 10

// daemonSetDefaults adjusts the flags' defaults for a DaemonSet run and
// rejects what it cannot do.
func daemonSetDefaults(fs *pflag.FlagSet, s *compare.Scenario, flags *compareFlags) error {
	for name, why := range map[string]string{
		"update-rate":     "the latency is read from the volumes on this machine's disk",
		"ttl":             "the cluster's TTL controller owns the nodes' TTL annotation; the run reads it and reports it",
		"agent-processes": "it runs agents on simulated nodes",
		"metrics-address": "it serves the metrics of agents in this process; scrape the DaemonSet's pods (the chart's PodMonitor does)",
	} {
		if fs.Changed(name) {
			return fmt.Errorf("--%s cannot be used with --daemonset: %s", name, why)
		}
	}
	if !fs.Changed("nodes") {
		s.Nodes = 0 // all of the DaemonSet's nodes
	}
	if !fs.Changed("modes") {
		flags.modes = "every-sync,first-reference"
	}
	if !fs.Changed("phase-duration") {
		s.PhaseDuration = 0 // four mean sync intervals, at least a minute
	}
	if fs.Changed("sync-frequency") {
		flags.daemonSet.SyncFrequency = s.SyncFrequency
	}
	return nil
}

// connect points opts at the cluster and gives it its fleets: with
// --daemonset, the cluster kubectl would use (or --kubeconfig's) and the
// DaemonSet's agents; with --kubeconfig, agents in this process; otherwise
// a local control plane that it starts (stop stops it), which also issues
// the node identities of agent processes and reference kubelets.
func connect(ctx context.Context, opts *compare.Options, flags compareFlags) (stop func(), err error) {
	stop = func() {}
	kubelets := slices.ContainsFunc(opts.Scenario.Modes, compare.Mode.IsReferenceKubelet)
	if flags.kubeconfig != "" || flags.kubeContext != "" || flags.daemonSet.DaemonSet != "" {
		switch {
		case kubelets:
			return stop, errors.New("the kubelet-* modes run reference kubelets as simulated nodes of a local control plane, which issues their node identities: leave out --kubeconfig, or those modes")
		case flags.agentProcesses:
			return stop, errors.New("--agent-processes runs the agents as simulated nodes of a local control plane, which issues their node identities: leave out --kubeconfig, or --agent-processes")
		}
		if opts.RESTConfig, err = clusterConfig(flags.kubeconfig, flags.kubeContext); err != nil {
			return stop, err
		}
		opts.APIServer = opts.RESTConfig.Host
		if flags.daemonSet.DaemonSet != "" {
			opts.Agents, err = daemonset.New(flags.daemonSet)
		} else {
			opts.Agents, err = inprocess.New(inprocess.Options{RESTConfig: opts.RESTConfig, MetricsAddress: flags.metricsAddress})
		}
		return stop, err
	}
	fmt.Fprintln(os.Stderr, "Starting a local etcd, kube-apiserver and kube-controller-manager...")
	cp, err := controlplane.Start(ctx, controlplane.Options{})
	if err != nil {
		return stop, err
	}
	fmt.Fprintf(os.Stderr, "Local control plane ready in %.1fs at %s.\n", cp.StartupDuration.Seconds(), cp.APIServerURL)
	opts.RESTConfig, opts.AuditLog = cp.RESTConfig(), cp.AuditLogPath()
	opts.APIServer = "local control plane (etcd " + controlplane.EtcdVersion + ", kube-apiserver " + controlplane.KubernetesVersion + ")"
	if err := localFleets(opts, cp, flags, kubelets); err != nil {
		cp.Stop()
		return stop, err
	}
	return cp.Stop, nil
}

// localFleets gives opts the fleets of a run on the local control plane cp:
// the agents in this process or as processes, acting as their nodes, and
// the reference kubelets when a mode runs them.
func localFleets(opts *compare.Options, cp *controlplane.ControlPlane, flags compareFlags, kubelets bool) error {
	var err error
	if flags.agentProcesses {
		if flags.metricsAddress != "" {
			return errors.New("--metrics-address serves the metrics of agents in this process: not with --agent-processes")
		}
		binary, err := findAgentBinary(flags.agentBinary)
		if err != nil {
			return err
		}
		opts.Agents, err = processes.Agents(binary, cp.NodeRESTConfig)
		if err != nil {
			return err
		}
	} else if opts.Agents, err = inprocess.New(inprocess.Options{RESTConfig: opts.RESTConfig, ActAsNodes: true, MetricsAddress: flags.metricsAddress}); err != nil {
		return err
	}
	if !kubelets {
		return nil
	}
	binDir, err := controlplane.FindBinDir()
	if err != nil {
		return err
	}
	opts.Kubelets, err = processes.Kubelets(binDir, cp.NodeRESTConfig)
	return err
}

// findAgentBinary is the binary --agent-processes runs: flagValue if set,
// else the agent-only build beside this binary (what the image ships, so
// that the memory measured is a deployed agent's), else this binary.
func findAgentBinary(flagValue string) (string, error) {
	if flagValue != "" {
		if _, err := os.Stat(flagValue); err != nil {
			return "", fmt.Errorf("--agent-binary: %w", err)
		}
		return flagValue, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("--agent-processes: finding this binary: %w", err)
	}
	if agentOnly := filepath.Join(filepath.Dir(self), "nodeagent-agent"); fileExists(agentOnly) {
		return agentOnly, nil
	}
	return self, nil
}

func fileExists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir()
}
