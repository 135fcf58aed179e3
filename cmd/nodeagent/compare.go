//go:build !agentonly

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/internal/daemon"
	"github.com/nodeagent-io/nodeagent/pkg/compare"
	"github.com/nodeagent-io/nodeagent/pkg/compare/daemonset"
	"github.com/nodeagent-io/nodeagent/pkg/compare/inprocess"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/compare/processes"
)

// compareFlags are the command line of `nodeagent compare`, beyond the
// scenario's own and the fleets'.
type compareFlags struct {
	kubeconfig, kubeContext, modes, podPhases, fleet string
}

// fleetKinds are the ways compare can run the agents, the first the
// default: each fleet package's kind, with its own flags.
func fleetKinds() []compare.FleetKind {
	return []compare.FleetKind{inprocess.Kind(), processes.Kind(), daemonset.Kind()}
}

func runCompare(args []string, stdout io.Writer) error {
	fs := newFlagSet("compare", "Measure the ConfigMap GET load of the kubelet's cache before and after kubernetes#120255, at the apiserver and at etcd, on a real apiserver: the agents of a fleet (--fleet) in each mode, beside the real kubelets and the load model.", stdout)
	s := compare.DefaultScenario()
	opts := compare.Options{Progress: os.Stderr}
	var flags compareFlags
	kinds := fleetKinds()
	defineCompareFlags(fs, &s, &opts, &flags, kinds)
	logging := daemon.AddLoggingFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	kind, err := checkCompareFlags(fs, &s, &flags, kinds)
	if err != nil {
		return err
	}
	if err := logging.SetUp(); err != nil {
		return err
	}
	defer klog.Flush()

	ctx, stop := daemon.SignalContext()
	defer stop()
	opts.Scenario, opts.Fleet = s, kind.Name
	stopControlPlane, err := connect(ctx, &opts, flags, kind)
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

// defineCompareFlags defines compare's flags on fs, into s, opts and
// flags, and adds each fleet kind's own.
func defineCompareFlags(fs *pflag.FlagSet, s *compare.Scenario, opts *compare.Options, flags *compareFlags, kinds []compare.FleetKind) {
	fs.StringVar(&flags.fleet, "fleet", "", "How the agents run: "+compare.FleetNames(kinds)+". Empty: the one its own flags ask for (--daemonset, --agent-processes), else "+kinds[0].Name+".")
	fs.StringVar(&flags.kubeconfig, "kubeconfig", "", "Cluster to measure. Empty: with --fleet daemonset, the cluster kubectl would use ($KUBECONFIG or ~/.kube/config, its current context); otherwise start a throwaway local etcd, kube-apiserver and kube-controller-manager (built by 'make controlplane').")
	fs.StringVar(&flags.kubeContext, "context", "", "The kubeconfig context to use. Empty: its current context.")
	fs.IntVar(&s.Nodes, "nodes", s.Nodes, "Simulated nodes: Node objects, each served by its own agent. With --fleet daemonset: how many of its nodes get the run's pods (default all).")
	fs.IntVar(&s.PodsPerNode, "pods-per-node", s.PodsPerNode, "Pods bound to each node.")
	fs.IntVar(&s.ConfigMapsPerPod, "configmaps-per-pod", s.ConfigMapsPerPod, "ConfigMap volumes per pod.")
	fs.IntVar(&s.SharedConfigMaps, "shared-configmaps", s.SharedConfigMaps, "Draw every pod's ConfigMaps from one pool of this many. 0: each pod has its own.")
	fs.BoolVar(&s.ServiceAccountVolume, "service-account-volume", s.ServiceAccountVolume, "Let the cluster's ServiceAccount admission plugin give every pod its kube-api-access volume, whose kube-root-ca.crt every sync reads, as on any real cluster. false: the pods set automountServiceAccountToken: false.")
	fs.DurationVar(&s.SyncFrequency, "sync-frequency", s.SyncFrequency, "The agents' --sync-frequency (S). With --fleet daemonset: set on the DaemonSet only if given; otherwise its own is kept.")
	fs.DurationVar(&s.TTL, "ttl", s.TTL, "TTL written to every simulated Node's node.alpha.kubernetes.io/ttl annotation, whole seconds. Not with --fleet daemonset: the cluster's TTL is read from its nodes.")
	fs.DurationVar(&s.PhaseDuration, "phase-duration", s.PhaseDuration, "How long each mode is measured, after its warm-up. With --fleet daemonset the default is four mean sync intervals, at least 1m.")
	fs.Float64Var(&s.UpdateRate, "update-rate", 0, "ConfigMap updates per second, round robin over the run's ConfigMaps, during each measured window; each phase then reports how long updates take to reach the disk of every pod that mounts them (p50, p99, max), beside the kubelet's behaviour. Only with a fleet on this machine (in-process, processes). 0: no updates.")
	fs.Float64Var(&s.PodChurn, "pod-churn", 0, "Pods that come and go: this many pods a second arrive on each simulated node during each measured window (a Poisson stream, starting one --pod-lifetime before it), each deleted --pod-lifetime after its creation; each reads --configmaps-per-pod ConfigMaps drawn at random from --churn-configmaps of its node's own, which no pod that stays reads, and kube-root-ca.crt, which every pod reads. Each phase then reports the arrivals and the model's churn term for them (docs/model.md, \"Pods that come and go\"). Only on simulated nodes (in-process, processes, the kubelet-* modes). 0: the pods stay.")
	fs.DurationVar(&s.PodLifetime, "pod-lifetime", 0, "With --pod-churn: each arriving pod's time from its creation to its deletion, at most --sync-frequency, so that it is gone before its first periodic sync. 0: half of --sync-frequency.")
	fs.IntVar(&s.ChurnConfigMaps, "churn-configmaps", compare.DefaultChurnConfigMaps, "With --pod-churn: how many ConfigMaps of its own each node's arriving pods draw from.")
	fs.DurationVar(&s.SampleInterval, "sample-interval", s.SampleInterval, "How often GET/s is sampled for the chart and the progress line.")
	fs.StringVar(&flags.modes, "modes", "every-sync,first-reference,watch", "Comma-separated modes, measured in this order: every-sync (before #120255), first-reference (after), watch (remount-on-change), watch-at-sync (changes at each pod's next sync), get; and the real kubelet on the same pods, one process per node: kubelet-v1.28 (before #120255), kubelet-v1.37 (after), kubelet-v1.37-watch (built by 'make refkubelet'; local control plane only). With --fleet daemonset the default leaves out watch, which needs deploy/overlays/watch's RBAC.")
	fs.StringVar(&flags.podPhases, "pod-phases", compare.PhasesMixed.String(), "Where the pods' syncs are when each window opens. mixed: compare updates every pod once or twice in the two sync periods before the window (an annotation), on a schedule that leaves each pod's syncs out of step with its node's other pods', as on a node whose pods started at different times: the steady state that the model and analyze predict. together: the window opens right after the agents start, when each node's pods sync together, as after a restart of every kubelet.")
	fs.StringVar(&opts.OutputDir, "output-dir", "_output/compare", "Where report.json, report.md, chart.svg, chart.png and agents.log are written.")
	fs.StringVar(&opts.Namespace, "namespace", compare.DefaultNamespace, "Namespace for the run's pods and ConfigMaps; its simulated Nodes are named <namespace>-node-NNN.")
	fs.BoolVar(&opts.Keep, "keep", false, "Leave the created nodes, pods and ConfigMaps in place.")
	fs.StringVar(&opts.ProfileDir, "profile-dir", "", "Write a CPU profile of each measured window (cpu-<mode>.pprof) and a heap profile at its end (heap-<mode>.pprof) of this process, whose agents they show, into this directory; read them with 'go tool pprof'.")
	for _, k := range kinds {
		fs.AddFlagSet(k.Flags)
	}
}

// checkCompareFlags chooses the fleet and checks what the flags alone
// decide, with the fleet's defaults, before anything is started or
// connected.
func checkCompareFlags(fs *pflag.FlagSet, s *compare.Scenario, flags *compareFlags, kinds []compare.FleetKind) (*compare.FleetKind, error) {
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	kind, err := compare.ChooseFleet(kinds, flags.fleet)
	if err != nil {
		return nil, err
	}
	if !fs.Changed("modes") && kind.DefaultModes != "" {
		flags.modes = kind.DefaultModes
	}
	if s.Modes, err = modes.ParseModes(flags.modes); err != nil {
		return nil, fmt.Errorf("--modes: %w", err)
	}
	if s.PodPhases, err = compare.ParsePodPhases(flags.podPhases); err != nil {
		return nil, err
	}
	if kind.Adjust != nil {
		if err := kind.Adjust(fs, s); err != nil {
			return nil, err
		}
	}
	if err := compare.CheckFleet(kind, kinds, fs, *s, flags.kubeconfig != "" || flags.kubeContext != ""); err != nil {
		return nil, err
	}
	if !kind.OnThisMachine {
		// The fleet fills in the nodes, S and the window from the
		// cluster, and validates the whole scenario then.
		return kind, s.ValidateFlags()
	}
	fitToMachine(fs, s)
	if s.PodLifetime == 0 {
		s.PodLifetime = s.SyncFrequency / 2
	}
	return kind, s.ValidateOnThisMachine()
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

// connect points opts at the cluster and builds its fleets: the cluster
// --kubeconfig names, or kubectl's for a fleet that measures its own
// cluster; otherwise a local control plane that it starts (stop stops it),
// which also issues the node identities of agent processes and reference
// kubelets.
func connect(ctx context.Context, opts *compare.Options, flags compareFlags, kind *compare.FleetKind) (stop func(), err error) {
	stop = func() {}
	if flags.kubeconfig != "" || flags.kubeContext != "" || kind.OwnCluster {
		if opts.RESTConfig, err = daemon.RESTConfig(flags.kubeconfig, flags.kubeContext); err != nil {
			return stop, err
		}
		opts.APIServer = opts.RESTConfig.Host
		opts.Agents, err = kind.New(compare.FleetEnv{RESTConfig: opts.RESTConfig})
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
	if err := localFleets(opts, cp, kind); err != nil {
		cp.Stop()
		return stop, err
	}
	return cp.Stop, nil
}

// localFleets gives opts the fleets of a run on the local control plane cp:
// the chosen kind's agents, and the reference kubelets when a mode runs
// them.
func localFleets(opts *compare.Options, cp *controlplane.ControlPlane, kind *compare.FleetKind) error {
	env := compare.FleetEnv{RESTConfig: opts.RESTConfig, NodeIdentity: cp.NodeRESTConfig}
	var err error
	if opts.Agents, err = kind.New(env); err != nil {
		return err
	}
	if !slices.ContainsFunc(opts.Scenario.Modes, modes.Mode.IsReferenceKubelet) {
		return nil
	}
	binDir, err := controlplane.FindBinDir()
	if err != nil {
		return err
	}
	opts.Kubelets, err = processes.Kubelets(binDir, cp.NodeRESTConfig)
	return err
}
