package compare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodeagent-io/nodeagent/internal/progress"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/compare/objects"
	"github.com/nodeagent-io/nodeagent/pkg/compare/results"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// Options configure Run.
type Options struct {
	Scenario Scenario
	// Agents runs nodeagent's modes, Kubelets the reference kubelet modes
	// (kubelet-*) beside them on the same nodes: fleets of the kinds the
	// command chose (see Fleet). Each may be nil when no mode needs it.
	Agents, Kubelets Fleet
	// RESTConfig reaches the apiserver as an identity that may create
	// Nodes, pods and ConfigMaps and read /metrics.
	RESTConfig *rest.Config
	// Fleet names the kind of fleet that runs the agents (FleetKind.Name),
	// for the report.
	Fleet string
	// APIServer says what is measured, for the report ("local control
	// plane", or the cluster's address).
	APIServer string
	// OutputDir receives report.json, report.md, the chart and the
	// fleets' logs.
	OutputDir string
	// Progress receives progress lines; nil shows none.
	Progress io.Writer
	// Namespace holds the run's objects; default DefaultNamespace.
	Namespace string
	// Keep leaves the created objects in place after the run.
	Keep bool
	// AuditLog is the apiserver's audit log of ConfigMap reads (the local
	// control plane's AuditLogPath). When set, each phase reports its
	// nodes' quorum and cached GETs and the watches they opened, as the
	// apiserver recorded them.
	AuditLog string
	// ProfileDir, when set, receives cpu-<mode>.pprof (this process over
	// each measured window) and heap-<mode>.pprof (at its end): where
	// agents in this process spend their CPU and memory.
	ProfileDir string
}

// DefaultPodImage is the run's pods' image: tiny, and already on every
// node as the sandbox image of most container runtimes.
const DefaultPodImage = "registry.k8s.io/pause:3.10"

// validate says, before anything is created or connected, why the options
// cannot make a run: a mode without the fleet that runs it.
func (o *Options) validate() error {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	for _, m := range o.Scenario.Modes {
		if o.fleetFor(m) == nil {
			if m.IsReferenceKubelet() {
				return fmt.Errorf("mode %s runs the reference kubelets: the run has none (they run on simulated nodes of a local control plane)", m)
			}
			return fmt.Errorf("mode %s runs nodeagent's agents: the run has none", m)
		}
	}
	return nil
}

// fleetFor is the fleet that runs mode.
func (o *Options) fleetFor(mode modes.Mode) Fleet {
	if mode.IsReferenceKubelet() {
		return o.Kubelets
	}
	return o.Agents
}

// fleets lists the fleets that run the scenario's modes.
func (o *Options) fleets() []Fleet {
	var out []Fleet
	for _, f := range []Fleet{o.Agents, o.Kubelets} {
		if f != nil && slices.ContainsFunc(o.Scenario.Modes, func(m modes.Mode) bool { return o.fleetFor(m) == f }) {
			out = append(out, f)
		}
	}
	return out
}

// Run performs the comparison and writes its report files. When ctx ends
// early (Ctrl-C) it stops the current phase, still writes what was
// measured, and returns the report with Interrupted set and ctx's error.
func Run(ctx context.Context, opts Options) (*results.Report, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	r, version, err := newRunner(opts)
	if err != nil {
		return nil, err
	}
	fleets := opts.fleets()
	defer func() {
		for _, f := range fleets {
			f.Close(ctx.Err() != nil)
		}
	}()
	if err := r.plan(ctx, opts, fleets); err != nil {
		return nil, err
	}
	withArrivals(r.scenario, opts.Namespace, r.nodes)
	report := &results.Report{Scenario: newScenarioReport(r.scenario), StartedAt: time.Now().UTC()}
	report.Scenario.APIServer, report.Scenario.APIServerVersion, report.Scenario.Fleet = opts.APIServer, version, opts.Fleet
	for _, f := range fleets {
		if describe := r.plans[f].Describe; describe != nil {
			describe(&report.Scenario)
		}
	}
	if !opts.Keep {
		defer r.deleteObjects()
	}
	fail := func(err error) (*results.Report, error) {
		report.Interrupted = ctx.Err() != nil
		return report, errors.Join(err, report.WriteFiles(opts.OutputDir))
	}
	if err := r.createObjects(ctx, opts); err != nil {
		return fail(err)
	}
	report.NotMeasured = r.scenario.Modes
	own, err := observedLayout(ctx, r.admin, opts.Namespace, r.nodes)
	if err != nil {
		return fail(err)
	}
	report.Scenario.DescribeVolumes(own)
	r.served = map[Fleet][]model.Node{}
	for _, f := range fleets {
		r.served[f] = withServedPods(own, r.plans[f].AlsoServed)
	}
	runErr := r.runPhases(ctx, report, opts.OutputDir)
	if err := report.WriteFiles(opts.OutputDir); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("writing the report: %w", err))
	}
	return report, runErr
}

// newRunner connects to the apiserver with the run's setup identity and
// makes the output directory; it returns the apiserver's version.
func newRunner(opts Options) (*runner, string, error) {
	setupConfig := rest.CopyConfig(opts.RESTConfig)
	setupConfig.QPS, setupConfig.Burst = 500, 1000
	admin, err := kubernetes.NewForConfig(setupConfig)
	if err != nil {
		return nil, "", err
	}
	version, err := admin.Discovery().ServerVersion()
	if err != nil {
		return nil, "", fmt.Errorf("cannot reach the apiserver at %s: %w", opts.RESTConfig.Host, err)
	}
	if err := os.MkdirAll(opts.OutputDir, 0o755); err != nil {
		return nil, "", fmt.Errorf("creating --output-dir: %w", err)
	}
	return &runner{
		admin: admin, progress: progress.New(opts.Progress), auditLog: opts.AuditLog, namespace: opts.Namespace,
		profileDir: opts.ProfileDir, fleetFor: opts.fleetFor,
	}, version.GitVersion, nil
}

// plan asks each fleet how it runs the scenario. The first fleet's plan
// is the run's; a second (the reference kubelets beside the agents) must
// put the run's pods on the same nodes.
func (r *runner) plan(ctx context.Context, opts Options, fleets []Fleet) error {
	r.plans = map[Fleet]Plan{}
	info := RunInfo{Scenario: opts.Scenario, Namespace: opts.Namespace, Client: r.admin, OutputDir: opts.OutputDir, Progress: r.progress}
	for i, f := range fleets {
		p, err := f.Plan(ctx, info)
		if err != nil {
			return err
		}
		r.plans[f] = p
		if i == 0 {
			r.scenario, r.nodes, r.simulatedNodes, r.nodesDescription = p.Scenario, p.Nodes, p.SimulatedNodes, p.NodesDescription
			continue
		}
		if !p.SimulatedNodes || !r.simulatedNodes || len(p.Nodes) != len(r.nodes) {
			return errors.New("the reference kubelets run on simulated nodes beside the agents: not beside agents on the cluster's own nodes")
		}
	}
	return nil
}

// runPhases measures the modes in order, writing the report so far after
// each phase, until the last or the first that fails.
func (r *runner) runPhases(ctx context.Context, report *results.Report, outputDir string) error {
	modes := r.scenario.Modes
	for i, mode := range modes {
		res, err := r.runPhase(ctx, mode)
		if res.MeasuredSeconds > 0 || err == nil {
			report.Phases = append(report.Phases, res)
			report.NotMeasured = modes[i+1:]
		} else {
			report.NotMeasured = modes[i:]
		}
		if err != nil {
			report.Interrupted = ctx.Err() != nil
			return fmt.Errorf("phase %s: %w", mode, err)
		}
		if len(report.NotMeasured) > 0 {
			// What is measured so far, in case the process dies later.
			if err := report.WriteFiles(outputDir); err != nil {
				r.progress.Done("Writing the report so far failed: %v", err)
			}
		}
	}
	return nil
}

// createObjects creates the run's namespace, ConfigMaps and pods, and its
// Nodes when they are simulated.
func (r *runner) createObjects(ctx context.Context, opts Options) error {
	s, start := r.scenario, time.Now()
	what := "simulated"
	if !r.simulatedNodes {
		what = r.nodesDescription
	}
	r.progress.Done("Creating %d pods and their ConfigMaps in namespace %s, on %d %s nodes...", s.Nodes*s.PodsPerNode, opts.Namespace, s.Nodes, what)
	created := objects.Options{SimulatedNodes: r.simulatedNodes, TTL: s.TTL, PodImage: r.podImage(), ServiceAccountVolume: s.ServiceAccountVolume}
	err := objects.Create(ctx, r.admin, opts.Namespace, r.nodes, created, func(done, total int) {
		r.progress.Status("setup    %d/%d objects", done, total)
	})
	if err != nil {
		return fmt.Errorf("creating the scenario's objects: %w", err)
	}
	r.progress.Done("Created the scenario's objects in %.1fs.", time.Since(start).Seconds())
	return nil
}

// podImage is the image of the run's pods: a fleet's, or the default.
func (r *runner) podImage() string {
	for _, p := range r.plans {
		if p.PodImage != "" {
			return p.PodImage
		}
	}
	return DefaultPodImage
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
	if err := objects.Delete(ctx, r.admin, r.namespace, r.simulatedNodes); err != nil {
		leftovers := "namespace " + r.namespace
		if r.simulatedNodes {
			leftovers += fmt.Sprintf(" and nodes labelled %s=%s", objects.RunLabel, r.namespace)
		}
		r.progress.Done("cleanup: %v (remove %s by hand)", err, leftovers)
	}
}

// newScenarioReport is s as report.json records it.
func newScenarioReport(s Scenario) results.ScenarioReport {
	return results.ScenarioReport{
		Nodes: s.Nodes, PodsPerNode: s.PodsPerNode, ConfigMapsPerPod: s.ConfigMapsPerPod, SharedConfigMaps: s.SharedConfigMaps,
		SyncFrequencySeconds: s.SyncFrequency.Seconds(), TTLSeconds: s.TTL.Seconds(), PhaseSeconds: s.PhaseDuration.Seconds(),
		Modes: s.Modes, ServiceAccountVolume: s.ServiceAccountVolume, UpdateRate: s.UpdateRate, PodPhases: s.PodPhases.String(),
		PodChurn: s.PodChurn, PodLifetimeSeconds: s.PodLifetime.Seconds(), ChurnConfigMaps: s.ChurnConfigMaps,
	}
}
