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
}

// Run performs the comparison and writes its report files. When ctx ends
// early (Ctrl-C) it stops the current phase, still writes what was
// measured, and returns the report with Interrupted set and ctx's error.
func Run(ctx context.Context, opts Options) (*Report, error) {
	s := opts.Scenario
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.OutputDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating --output-dir: %w", err)
	}
	logFile, err := os.Create(filepath.Join(opts.OutputDir, "agents.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()

	setupConfig := rest.CopyConfig(opts.RESTConfig)
	setupConfig.QPS, setupConfig.Burst = 500, 1000
	admin, err := kubernetes.NewForConfig(setupConfig)
	if err != nil {
		return nil, err
	}
	report := &Report{Scenario: newScenarioReport(s), StartedAt: time.Now().UTC()}
	report.Scenario.APIServer = opts.APIServer
	if v, err := admin.Discovery().ServerVersion(); err == nil {
		report.Scenario.APIServerVersion = v.GitVersion
	} else {
		return nil, fmt.Errorf("cannot reach the apiserver at %s: %w", opts.RESTConfig.Host, err)
	}

	prog := newProgress(opts.Progress)
	nodes := layout(s, opts.Namespace)
	r := &runner{
		scenario:   s,
		restConfig: opts.RESTConfig,
		admin:      admin,
		nodes:      nodes,
		workDir:    filepath.Join(opts.OutputDir, "nodes"),
		agentLog:   logr.FromSlogHandler(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo})),
		progress:   prog,
		// Creating and mounting thousands of volumes takes a while on two
		// cores; a stagger adds one refresh cycle.
		warmupTimeout: 2*time.Minute + time.Duration(s.Nodes*s.PodsPerNode)*20*time.Millisecond + refreshCycle(s, s.TTL),
	}
	defer os.RemoveAll(r.workDir)

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
	prog.done("Creating %d nodes, %d pods and their ConfigMaps in namespace %s...", s.Nodes, s.Nodes*s.PodsPerNode, opts.Namespace)
	err = createObjects(ctx, admin, opts.Namespace, s, nodes, func(done, total int) {
		prog.status("setup    %d/%d objects", done, total)
	})
	if err != nil {
		report.Interrupted = ctx.Err() != nil
		return report, errors.Join(fmt.Errorf("creating the scenario's objects: %w", err), report.WriteFiles(opts.OutputDir))
	}
	prog.done("Created the scenario's objects in %.1fs.", time.Since(start).Seconds())

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
