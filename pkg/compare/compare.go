package compare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// Options configure Run.
type Options struct {
	Scenario Scenario
	// RESTConfig reaches the apiserver as an identity that may create
	// Nodes, pods and ConfigMaps and read /metrics; the agents use a copy.
	RESTConfig *rest.Config
	// APIServer says what is measured, for the report ("local control
	// plane", or the cluster's address).
	APIServer string
	// OutputDir receives report.json, report.md, the chart and agents.log.
	OutputDir string
	// Progress receives progress lines; nil shows none.
	Progress io.Writer
	// Namespace holds the run's objects; default DefaultNamespace.
	Namespace string
	// Keep leaves the created objects in place after the run.
	Keep bool

	// DaemonSet, as namespace/name, measures the agents of that DaemonSet
	// on the cluster's real nodes instead of agents in this process. Each
	// phase switches the DaemonSet to the mode and waits for the rollout;
	// the end of the run, Ctrl-C included, restores its pod template.
	// Scenario.Nodes is then how many of its nodes get the run's pods
	// (0: all), and Scenario.TTL is read from the nodes, not written.
	DaemonSet string
	// SetSyncFrequency, in a DaemonSet run, sets the agents'
	// --sync-frequency to Scenario.SyncFrequency; otherwise the
	// DaemonSet's own value is kept, and modelled.
	SetSyncFrequency bool
	// NodeSelector, a label selector, limits a DaemonSet run's pods to the
	// matching nodes among the DaemonSet's. Empty: all of them.
	NodeSelector string
	// PodImage is the image of the run's pods, which the kubelets of a
	// DaemonSet run start. Default DefaultPodImage.
	PodImage string
	// RolloutTimeout bounds each rollout of the DaemonSet. Default 5 m.
	RolloutTimeout time.Duration

	// NodeIdentity, when set, issues each simulated node's client
	// identity (the local control plane's NodeRESTConfig): its agent or
	// reference kubelet then authenticates as that node, as a kubelet
	// does, and the audit log attributes its requests to it. The
	// reference kubelet modes need it. Agents in this process, where it
	// is set, act as their nodes by impersonation instead (RESTConfig's
	// user must be allowed to impersonate nodes), so that they share
	// RESTConfig's connections: see inProcessFleet.
	NodeIdentity func(node string) (*rest.Config, error)
	// AuditLog is the apiserver's audit log of ConfigMap reads (the local
	// control plane's AuditLogPath). When set, each phase reports its
	// nodes' quorum and cached GETs and the watches they opened, as the
	// apiserver recorded them.
	AuditLog string
	// RefKubeletDir holds refkubelet-v1.28 and refkubelet-v1.36, built
	// by `make refkubelet`, for the reference kubelet modes.
	RefKubeletDir string
	// ProfileDir, when set, receives cpu-<mode>.pprof (this process over
	// each measured window) and heap-<mode>.pprof (at its end): where
	// agents in this process spend their CPU and memory.
	ProfileDir string
	// AgentBinary, when set, is nodeagent's binary: each simulated node's
	// agent then runs as its own `nodeagent run` process, as on a real
	// node, and the CPU time and memory reported are each agent's alone,
	// read from /proc, where agents in this process share them with the
	// run's own work. Needs NodeIdentity.
	AgentBinary string
	// MetricsAddress, when set, is where this process serves the metrics
	// of the agents it runs (in-process agents only), at /metrics, each
	// series labelled with its node as the chart's PodMonitor labels a
	// DaemonSet's: point a Prometheus at it to watch a run with
	// deploy/prometheus's rules and dashboard.
	MetricsAddress string
}

// DefaultPodImage is the run's pods' image: tiny, and already on every
// node as the sandbox image of most container runtimes.
const DefaultPodImage = "registry.k8s.io/pause:3.10"

// runKind is what a comparison runs its agents as. It follows from the
// options (Options.kind) and is decided once; each kind has its fleet.
type runKind int

const (
	// inProcessAgents: one agent per simulated node, in this process
	// (inProcessFleet).
	inProcessAgents runKind = iota
	// agentProcesses: one `nodeagent run` process per simulated node
	// (processFleet), so that each agent's CPU and memory are its own.
	agentProcesses
	// daemonSetAgents: the agents of a DaemonSet deployed on the
	// cluster's nodes (daemonSetFleet).
	daemonSetAgents
)

func (o *Options) kind() runKind {
	switch {
	case o.DaemonSet != "":
		return daemonSetAgents
	case o.AgentBinary != "":
		return agentProcesses
	}
	return inProcessAgents
}

// setDefaults fills in the options left empty.
func (o *Options) setDefaults() {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.PodImage == "" {
		o.PodImage = DefaultPodImage
	}
	if o.RolloutTimeout <= 0 {
		o.RolloutTimeout = 5 * time.Minute
	}
}

// Validate says, before anything is created or connected, why the
// options cannot make a run of their kind, in terms of the command's flags.
// Run calls it; a caller may call it earlier. A DaemonSet run's scenario
// is validated once the cluster has filled it in.
func (o *Options) Validate() error {
	kubelets := slices.ContainsFunc(o.Scenario.Modes, Mode.IsReferenceKubelet)
	// Processes on simulated nodes need the node identities that only the
	// local control plane issues.
	if kubelets && o.NodeIdentity == nil {
		return errors.New("the kubelet-* modes run reference kubelets as simulated nodes of a local control plane, which issues their node identities: leave out --kubeconfig, or those modes")
	}
	if o.AgentBinary != "" && o.NodeIdentity == nil {
		return errors.New("--agent-processes runs the agents as simulated nodes of a local control plane, which issues their node identities: leave out --kubeconfig, or --agent-processes")
	}
	switch o.kind() {
	case daemonSetAgents:
		if kubelets {
			return errors.New("the reference kubelet modes run on simulated nodes of the local control plane: leave them out of --modes with --daemonset")
		}
		if o.AgentBinary != "" {
			return errors.New("--agent-processes runs agents on simulated nodes: leave it out with --daemonset")
		}
		return nil
	}
	if err := o.Scenario.Validate(); err != nil {
		return err
	}
	if o.kind() == agentProcesses {
		if err := checkProcesses(o.Scenario.Nodes, nil, "", o.AgentBinary); err != nil {
			return err
		}
	}
	if kubelets {
		return checkProcesses(o.Scenario.Nodes, o.Scenario.Modes, o.RefKubeletDir, "")
	}
	return nil
}

// Run performs the comparison and writes its report files. When ctx ends
// early (Ctrl-C) it stops the current phase, still writes what was
// measured, and returns the report with Interrupted set and ctx's error.
func Run(ctx context.Context, opts Options) (*Report, error) {
	opts.setDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	setupConfig := rest.CopyConfig(opts.RESTConfig)
	setupConfig.QPS, setupConfig.Burst = 500, 1000
	admin, err := kubernetes.NewForConfig(setupConfig)
	if err != nil {
		return nil, err
	}
	version, err := admin.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("cannot reach the apiserver at %s: %w", opts.RESTConfig.Host, err)
	}
	if err := os.MkdirAll(opts.OutputDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating --output-dir: %w", err)
	}
	r := &runner{admin: admin, progress: newProgress(opts.Progress), auditLog: opts.AuditLog, namespace: opts.Namespace, profileDir: opts.ProfileDir}
	closeLog, err := r.setUpFleets(ctx, &opts)
	if err != nil {
		return nil, err
	}
	defer closeLog()
	s := r.scenario

	report := &Report{Scenario: newScenarioReport(s), StartedAt: time.Now().UTC()}
	report.Scenario.APIServer, report.Scenario.APIServerVersion = opts.APIServer, version.GitVersion
	report.Scenario.AgentProcesses = opts.kind() == agentProcesses
	if report.Scenario.AgentProcesses {
		report.Scenario.AgentBinary = opts.AgentBinary
	}
	if ds, ok := r.agents.(*daemonSetFleet); ok {
		report.describeDaemonSetRun(opts.DaemonSet, ds)
	}
	if !opts.Keep {
		defer r.deleteObjects()
	}
	if err := r.createObjects(ctx, opts); err != nil {
		report.Interrupted = ctx.Err() != nil
		return report, errors.Join(err, report.WriteFiles(opts.OutputDir))
	}
	report.NotMeasured = s.Modes
	own, err := observedLayout(ctx, admin, opts.Namespace, r.nodes)
	if err != nil {
		return report, errors.Join(err, report.WriteFiles(opts.OutputDir))
	}
	report.Scenario.describeVolumes(own)
	r.served = map[fleet][]model.Node{}
	for _, f := range r.fleets() {
		if r.served[f], err = f.prepare(ctx, own); err != nil {
			return report, errors.Join(err, report.WriteFiles(opts.OutputDir))
		}
		defer func() { f.cleanup(ctx.Err() != nil) }()
	}

	var runErr error
	for i, mode := range s.Modes {
		res, err := r.runPhase(ctx, mode)
		if res.MeasuredSeconds > 0 || err == nil {
			report.Phases = append(report.Phases, res)
			report.NotMeasured = s.Modes[i+1:]
		} else {
			report.NotMeasured = s.Modes[i:]
		}
		if err != nil {
			report.Interrupted = ctx.Err() != nil
			runErr = fmt.Errorf("phase %s: %w", mode, err)
			break
		}
		if len(report.NotMeasured) > 0 {
			// What is measured so far, in case the process dies later.
			if err := report.WriteFiles(opts.OutputDir); err != nil {
				r.progress.done("Writing the report so far failed: %v", err)
			}
		}
	}
	if err := report.WriteFiles(opts.OutputDir); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("writing the report: %w", err))
	}
	return report, runErr
}

// setUpFleets fixes the run's scenario and nodes and builds its fleets,
// by the run's kind: a DaemonSet run reads them from the DaemonSet and the
// cluster; the others lay out simulated nodes, whose agents log to
// agents.log (closeLog closes it), and add the reference kubelets when a
// mode asks for them.
func (r *runner) setUpFleets(ctx context.Context, opts *Options) (closeLog func(), err error) {
	if opts.MetricsAddress != "" && opts.kind() != inProcessAgents {
		return nil, errors.New("--metrics-address serves the metrics of agents in this process: not with --daemonset " +
			"(scrape the DaemonSet's pods; the chart's PodMonitor does) or --agent-processes")
	}
	if opts.kind() == daemonSetAgents {
		r.agents, r.scenario, r.nodes, err = prepareDaemonSetRun(ctx, r.admin, opts, r.progress)
		return func() {}, err
	}
	r.scenario = opts.Scenario
	r.nodes = layout(r.scenario, opts.Namespace)
	logFile, err := os.Create(filepath.Join(opts.OutputDir, "agents.log"))
	if err != nil {
		return nil, err
	}
	if opts.kind() == agentProcesses {
		r.agents = &processFleet{
			scenario: r.scenario, nodes: r.nodes, command: agentCommand(r.scenario, opts.AgentBinary), identity: opts.NodeIdentity,
			logDir: filepath.Join(opts.OutputDir, "agents"), progress: r.progress,
		}
	} else {
		f := &inProcessFleet{
			scenario: r.scenario, restConfig: opts.RESTConfig, actAsNodes: opts.NodeIdentity != nil, nodes: r.nodes,
			workDir: filepath.Join(opts.OutputDir, "nodes"),
			log:     logr.FromSlogHandler(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo})),
		}
		if opts.MetricsAddress != "" {
			f.registries = &agentRegistries{}
			if err := serveMetrics(ctx, opts.MetricsAddress, f.registries); err != nil {
				_ = logFile.Close()
				return nil, err
			}
		}
		r.agents = f
	}
	if slices.ContainsFunc(r.scenario.Modes, Mode.IsReferenceKubelet) {
		r.kubelets = &processFleet{
			scenario: r.scenario, nodes: r.nodes, command: kubeletCommand(r.scenario, opts.RefKubeletDir), identity: opts.NodeIdentity,
			logDir: filepath.Join(opts.OutputDir, "kubelets"), progress: r.progress,
		}
	}
	return func() { logFile.Close() }, nil
}

// createObjects creates the run's namespace, ConfigMaps and pods, and its
// Nodes when they are simulated.
func (r *runner) createObjects(ctx context.Context, opts Options) error {
	s, start := r.scenario, time.Now()
	what := "simulated"
	if opts.kind() == daemonSetAgents {
		what = "of DaemonSet " + opts.DaemonSet + "'s"
	}
	r.progress.done("Creating %d pods and their ConfigMaps in namespace %s, on %d %s nodes...", s.Nodes*s.PodsPerNode, opts.Namespace, s.Nodes, what)
	err := createObjects(ctx, r.admin, opts.Namespace, s, r.nodes, objectOptions{simulatedNodes: opts.kind() != daemonSetAgents, podImage: opts.PodImage}, func(done, total int) {
		r.progress.status("setup    %d/%d objects", done, total)
	})
	if err != nil {
		return fmt.Errorf("creating the scenario's objects: %w", err)
	}
	r.progress.done("Created the scenario's objects in %.1fs.", time.Since(start).Seconds())
	return nil
}

// deleteObjects removes the run's objects, saying what to remove by hand
// if it cannot.
func (r *runner) deleteObjects() {
	// The apiserver deletes a collection one object at a time: 30,000
	// pods take minutes.
	s := r.scenario
	timeout := time.Minute + time.Duration(s.Nodes*s.PodsPerNode)*10*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := deleteObjects(ctx, r.admin, r.namespace); err != nil {
		r.progress.done("cleanup: %v (remove namespace %s and nodes labelled %s=%s by hand)", err, r.namespace, runLabel, r.namespace)
	}
}
