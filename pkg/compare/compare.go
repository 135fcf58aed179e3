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
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
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
}

// DefaultPodImage is the run's pods' image: tiny, and already on every
// node as the sandbox image of most container runtimes.
const DefaultPodImage = "registry.k8s.io/pause:3.10"

// Run performs the comparison and writes its report files. When ctx ends
// early (Ctrl-C) it stops the current phase, still writes what was
// measured, and returns the report with Interrupted set and ctx's error.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.PodImage == "" {
		opts.PodImage = DefaultPodImage
	}
	if opts.RolloutTimeout <= 0 {
		opts.RolloutTimeout = 5 * time.Minute
	}
	if opts.DaemonSet == "" {
		if err := opts.Scenario.Validate(); err != nil {
			return nil, err
		}
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
	prog := newProgress(opts.Progress)
	r := &runner{admin: admin, progress: prog, auditLog: opts.AuditLog, namespace: opts.Namespace, profileDir: opts.ProfileDir}
	var ds *daemonSetFleet
	if opts.DaemonSet != "" {
		if slices.ContainsFunc(opts.Scenario.Modes, Mode.IsReferenceKubelet) {
			return nil, errors.New("the reference kubelet modes run on simulated nodes of the local control plane: leave them out of --modes with --daemonset")
		}
		if ds, err = prepareDaemonSetRun(ctx, admin, &opts, r); err != nil {
			return nil, err
		}
	} else {
		r.scenario = opts.Scenario
	}
	s := r.scenario
	if err := os.MkdirAll(opts.OutputDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating --output-dir: %w", err)
	}
	report := &Report{Scenario: newScenarioReport(s), StartedAt: time.Now().UTC()}
	report.Scenario.APIServer, report.Scenario.APIServerVersion = opts.APIServer, version.GitVersion
	if ds != nil {
		report.describeDaemonSetRun(opts.DaemonSet, ds)
		r.agents = ds
	} else {
		nodes := layout(s, opts.Namespace)
		logFile, err := os.Create(filepath.Join(opts.OutputDir, "agents.log"))
		if err != nil {
			return nil, err
		}
		defer logFile.Close()
		if opts.AgentBinary != "" {
			agents := &processFleet{
				scenario: s, nodes: nodes, agentBinary: opts.AgentBinary, identity: opts.NodeIdentity,
				logDir: filepath.Join(opts.OutputDir, "agents"), progress: prog,
			}
			if err := agents.check(nil); err != nil {
				return nil, err
			}
			r.agents = agents
			report.Scenario.AgentProcesses = true
		} else {
			r.agents = &inProcessFleet{
				scenario: s, restConfig: opts.RESTConfig, actAsNodes: opts.NodeIdentity != nil, nodes: nodes,
				workDir: filepath.Join(opts.OutputDir, "nodes"),
				log:     logr.FromSlogHandler(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo})),
			}
		}
		if slices.ContainsFunc(s.Modes, Mode.IsReferenceKubelet) {
			kubelets := &processFleet{
				scenario: s, nodes: nodes, binDir: opts.RefKubeletDir, identity: opts.NodeIdentity,
				logDir: filepath.Join(opts.OutputDir, "kubelets"), progress: prog,
			}
			if err := kubelets.check(s.Modes); err != nil {
				return nil, err
			}
			r.kubelets = kubelets
		}
		r.nodes = nodes
	}

	if !opts.Keep {
		defer func() {
			// The apiserver deletes a collection one object at a time:
			// 30,000 pods take minutes.
			timeout := time.Minute + time.Duration(s.Nodes*s.PodsPerNode)*10*time.Millisecond
			cleanupCtx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			if err := deleteObjects(cleanupCtx, admin, opts.Namespace); err != nil {
				prog.done("cleanup: %v (remove namespace %s and nodes labelled %s=%s by hand)", err, opts.Namespace, runLabel, opts.Namespace)
			}
		}()
	}

	start := time.Now()
	what := "simulated"
	if ds != nil {
		what = "of DaemonSet " + opts.DaemonSet + "'s"
	}
	prog.done("Creating %d pods and their ConfigMaps in namespace %s, on %d %s nodes...", s.Nodes*s.PodsPerNode, opts.Namespace, s.Nodes, what)
	err = createObjects(ctx, admin, opts.Namespace, s, r.nodes, objectOptions{simulatedNodes: ds == nil, podImage: opts.PodImage}, func(done, total int) {
		prog.status("setup    %d/%d objects", done, total)
	})
	if err != nil {
		report.Interrupted = ctx.Err() != nil
		return report, errors.Join(fmt.Errorf("creating the scenario's objects: %w", err), report.WriteFiles(opts.OutputDir))
	}
	prog.done("Created the scenario's objects in %.1fs.", time.Since(start).Seconds())
	own, err := observedLayout(ctx, admin, opts.Namespace, r.nodes)
	if err != nil {
		return report, err
	}
	report.Scenario.describeVolumes(own)
	r.served = map[fleet][]model.Node{}
	for _, f := range r.fleets() {
		if r.served[f], err = f.prepare(ctx, own); err != nil {
			return report, err
		}
		defer func() { f.cleanup(ctx.Err() != nil) }()
	}

	var runErr error
	for _, mode := range s.Modes {
		res, err := r.runPhase(ctx, mode)
		if res.MeasuredSeconds > 0 || err == nil {
			report.Phases = append(report.Phases, res)
		}
		if err != nil {
			report.Interrupted = ctx.Err() != nil
			runErr = fmt.Errorf("phase %s: %w", mode, err)
			break
		}
	}
	if err := report.WriteFiles(opts.OutputDir); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("writing the report: %w", err))
	}
	return report, runErr
}
