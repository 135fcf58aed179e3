package compare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
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
	r := &runner{admin: admin, progress: prog}
	var ds *daemonSetFleet
	if opts.DaemonSet != "" {
		if ds, err = prepareDaemonSetRun(ctx, admin, &opts, r); err != nil {
			return nil, err
		}
	} else {
		r.scenario, r.nodes = opts.Scenario, layout(opts.Scenario, opts.Namespace)
	}
	s := r.scenario

	if err := os.MkdirAll(opts.OutputDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating --output-dir: %w", err)
	}
	report := &Report{Scenario: newScenarioReport(s), StartedAt: time.Now().UTC()}
	report.Scenario.APIServer, report.Scenario.APIServerVersion = opts.APIServer, version.GitVersion
	// Creating and mounting thousands of volumes takes a while on two
	// cores; a stagger adds one refresh cycle.
	r.warmupPoll = 250 * time.Millisecond
	r.warmupTimeout = 2*time.Minute + time.Duration(s.Nodes*s.PodsPerNode)*20*time.Millisecond + refreshCycle(s.SyncFrequency, s.TTL)
	ownNodes := r.nodes
	if ds != nil {
		report.describeDaemonSetRun(opts.DaemonSet, ds)
		r.warmupTimeout += opts.RolloutTimeout
		r.warmupPoll = 2 * time.Second
		r.fleet = ds
	} else {
		logFile, err := os.Create(filepath.Join(opts.OutputDir, "agents.log"))
		if err != nil {
			return nil, err
		}
		defer logFile.Close()
		workDir := filepath.Join(opts.OutputDir, "nodes")
		defer os.RemoveAll(workDir)
		r.fleet = &inProcessFleet{
			scenario: s, restConfig: opts.RESTConfig, nodes: r.nodes, workDir: workDir,
			log: logr.FromSlogHandler(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo})),
		}
	}

	if !opts.Keep {
		defer func() {
			cleanupCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
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
	err = createObjects(ctx, admin, opts.Namespace, s, ownNodes, objectOptions{simulatedNodes: ds == nil, podImage: opts.PodImage}, func(done, total int) {
		prog.status("setup    %d/%d objects", done, total)
	})
	if err != nil {
		report.Interrupted = ctx.Err() != nil
		return report, errors.Join(fmt.Errorf("creating the scenario's objects: %w", err), report.WriteFiles(opts.OutputDir))
	}
	prog.done("Created the scenario's objects in %.1fs.", time.Since(start).Seconds())
	if ownNodes, err = observedLayout(ctx, admin, opts.Namespace, ownNodes); err != nil {
		return report, err
	}
	r.nodes = ownNodes
	report.Scenario.describeVolumes(ownNodes)

	if ds != nil {
		r.nodes = withServedPods(ownNodes, ds.agentNodes, ds.served)
		if restoredEarlier, err := ds.saveOriginal(ctx); err != nil {
			return report, fmt.Errorf("recording DaemonSet %s's pod template before changing it: %w", opts.DaemonSet, err)
		} else if restoredEarlier {
			prog.done("DaemonSet %s still carries the template an earlier run did not restore; it will be restored at the end.", opts.DaemonSet)
		}
		defer func() {
			// Restore at once, also after Ctrl-C; wait for the rollout only
			// when not interrupted, so that Ctrl-C returns promptly.
			restoreCtx, cancel := context.WithTimeout(context.Background(), opts.RolloutTimeout+time.Minute)
			defer cancel()
			wait := ctx.Err() == nil
			prog.done("Restoring DaemonSet %s's original pod template...", opts.DaemonSet)
			if err := ds.restore(restoreCtx, wait); err != nil {
				prog.done("restoring DaemonSet %s: %v; restore it by hand from its annotation %s", opts.DaemonSet, err, originalTemplateAnnotation)
			} else if !wait {
				prog.done("Restored; the rollout continues: `kubectl -n %s rollout status daemonset/%s`", ds.namespace, ds.name)
			}
		}()
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
