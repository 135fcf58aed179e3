// Package processes is compare's fleet of one process per simulated node
// of a local control plane, each with that node's own identity: the real
// kubelet (hack/refkubelet) for the reference modes, or nodeagent's own
// `nodeagent run`, so that each agent's CPU time and memory are its own.
// The processes' metrics are not read; the apiserver's audit log counts
// their requests, and /proc their CPU time and memory.
package processes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/internal/procstat"
	"github.com/nodeagent-io/nodeagent/internal/progress"
	"github.com/nodeagent-io/nodeagent/pkg/compare"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/compare/objects"
	"github.com/nodeagent-io/nodeagent/pkg/compare/results"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// Fleet runs one process per simulated node.
type Fleet struct {
	// name says what the processes are, in messages and as the log
	// directory's name: "agents" or "kubelets".
	name     string
	command  func(s compare.Scenario) commandFunc
	check    func(s compare.Scenario) error
	identity func(node string) (*rest.Config, error)
	binary   string // the agents' binary, for the report

	// Set by Plan.
	scenario compare.Scenario
	nodes    []model.Node
	logDir   string
	progress *progress.Progress
	// workDir, a temporary directory made at the first Start and removed
	// at Close, holds each phase's root directories (removed at the
	// phase's end).
	workDir string
}

// Agents is a fleet of `nodeagent run` processes of binary. identity
// issues each node's client identity (the local control plane's
// NodeRESTConfig), so that the audit log attributes each request to its
// node.
func Agents(binary string, identity func(node string) (*rest.Config, error)) (*Fleet, error) {
	if identity == nil {
		return nil, errors.New("--agent-processes runs the agents as simulated nodes of a local control plane, which issues their node identities: leave out --kubeconfig, or --agent-processes")
	}
	if info, err := os.Stat(binary); err != nil || info.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("the agents' processes need nodeagent's binary at %s: run `make build`", binary)
	}
	return &Fleet{
		name: "agents", identity: identity, binary: binary,
		command: func(s compare.Scenario) commandFunc { return agentCommand(s, binary) },
		check:   func(s compare.Scenario) error { return checkMemory(s.Nodes, false) },
	}, nil
}

// Kubelets is a fleet of reference kubelets, built by `make refkubelet`
// into binDir, beside the agents on the same simulated nodes. identity is
// as for Agents.
func Kubelets(binDir string, identity func(node string) (*rest.Config, error)) (*Fleet, error) {
	if identity == nil {
		return nil, errors.New("the kubelet-* modes run reference kubelets as simulated nodes of a local control plane, which issues their node identities: leave out --kubeconfig, or those modes")
	}
	return &Fleet{
		name: "kubelets", identity: identity,
		command: func(s compare.Scenario) commandFunc { return kubeletCommand(s, binDir) },
		check: func(s compare.Scenario) error {
			if err := checkKubelets(s.Modes, binDir); err != nil {
				return err
			}
			return checkMemory(s.Nodes, true)
		},
	}, nil
}

// Plan lays the scenario out on simulated nodes, once the processes fit
// this machine.
func (f *Fleet) Plan(_ context.Context, run compare.RunInfo) (compare.Plan, error) {
	s := run.Scenario
	if err := s.ValidateOnThisMachine(); err != nil {
		return compare.Plan{}, err
	}
	if err := f.check(s); err != nil {
		return compare.Plan{}, err
	}
	f.scenario, f.nodes, f.progress = s, compare.Layout(s, run.Namespace), run.Progress
	f.logDir = filepath.Join(run.OutputDir, f.name)
	plan := compare.Plan{
		Scenario: s, Nodes: f.nodes, SimulatedNodes: true,
		// The processes' start (node registration, informers' sync) takes
		// a while; each ask walks every root directory.
		WarmupExtra: 30 * time.Second, WarmupPoll: time.Second,
	}
	if f.binary != "" {
		plan.Describe = func(r *results.ScenarioReport) { r.AgentProcesses, r.AgentBinary = true, f.binary }
	}
	return plan, nil
}

// Close removes the processes' root directories.
func (f *Fleet) Close(bool) {
	if f.workDir != "" {
		_ = os.RemoveAll(f.workDir)
	}
}

// kubeletGrace is how long a reference kubelet gets to exit on SIGTERM.
const kubeletGrace = 5 * time.Second

// checkKubelets fails early, saying what to build, when a reference
// kubelet of modes is missing from binDir.
func checkKubelets(modes []modes.Mode, binDir string) error {
	for _, m := range modes {
		k, ok := m.ReferenceKubelet()
		if !ok {
			continue
		}
		if info, err := os.Stat(filepath.Join(binDir, k.Binary())); err != nil || info.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("mode %s needs %s in %s: run `make refkubelet` to build the reference kubelets", m, k.Binary(), binDir)
		}
	}
	return nil
}

// Resident memory of one process with a node's pods: at least the peak
// measured with 110 pods in the record idle-1m (docs/runs/idle-1m.json, one
// process per node), with room for the full nodeagent binary, which
// --agent-binary may name, and for a busier node. TestMemoryBoundsHoldTheRecord
// holds them to the record.
const (
	agentProcessBytes   = 64 << 20
	kubeletProcessBytes = 160 << 20
)

// checkMemory refuses a run whose processes would not fit in the memory
// this machine has available: a thousand kubelets need over 100 GiB.
func checkMemory(nodes int, kubelets bool) error {
	perProcess, what := int64(agentProcessBytes), "nodeagent process"
	if kubelets {
		perProcess, what = kubeletProcessBytes, "reference kubelet"
	}
	available := procstat.KB("/proc/meminfo", "MemAvailable:") << 10
	if need := perProcess * int64(nodes); available > 0 && need > available*4/5 {
		return fmt.Errorf("%d simulated nodes, each its own %s of about %d MiB, need %d MiB; this machine has %d MiB available: lower --nodes to %d or fewer",
			nodes, what, perProcess>>20, need>>20, available>>20, available*4/5/perProcess)
	}
	return nil
}

// commandFunc is the process of node in mode: its name, binary and
// arguments.
type commandFunc func(mode modes.Mode, node model.Node, kubeconfig, rootDir string) (name, path string, args []string)

// agentCommand runs nodeagent's binary, configured as the scenario's
// in-process agents are.
func agentCommand(s compare.Scenario, binary string) commandFunc {
	return func(mode modes.Mode, node model.Node, kubeconfig, rootDir string) (string, string, []string) {
		cfg := s.AgentConfig(mode, node.Name, rootDir)
		return "nodeagent", binary, cfg.Command(kubeconfig)
	}
}

// kubeletCommand runs the reference kubelet of mode from binDir, with the
// kubelet's own flags (hack/refkubelet) and the agents' rate limits.
func kubeletCommand(s compare.Scenario, binDir string) commandFunc {
	return func(mode modes.Mode, node model.Node, kubeconfig, rootDir string) (string, string, []string) {
		k, _ := mode.ReferenceKubelet()
		cfg := s.AgentConfig(mode, node.Name, rootDir)
		return k.Binary(), filepath.Join(binDir, k.Binary()), []string{
			"--node-name=" + node.Name,
			"--kubeconfig=" + kubeconfig,
			"--root-dir=" + rootDir,
			"--sync-frequency=" + s.SyncFrequency.String(),
			"--configmap-change-detection-strategy=" + string(k.Strategy),
			"--kube-api-qps=" + strconv.FormatFloat(float64(cfg.KubeAPIQPS), 'f', -1, 32),
			"--kube-api-burst=" + strconv.Itoa(cfg.KubeAPIBurst),
			"--max-pods=" + strconv.Itoa(objects.NodePodCapacity(len(node.Pods))),
		}
	}
}

// Start writes each node's kubeconfig and starts its process in mode.
func (f *Fleet) Start(_ context.Context, mode modes.Mode, stagger time.Duration) (compare.Phase, error) {
	if f.workDir == "" {
		// Short: the kubelet makes unix sockets under its root directory,
		// whose paths must fit in 108 bytes.
		dir, err := os.MkdirTemp("", "nodeagent-kubelets-")
		if err != nil {
			return nil, err
		}
		f.workDir = dir
	}
	p := &phase{fleet: f, mode: mode, dir: filepath.Join(f.workDir, string(mode)), logDir: filepath.Join(f.logDir, string(mode))}
	kubeconfigs, err := p.writeKubeconfigs()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	command := f.command(f.scenario)
	compare.Staggered(ctx, &p.wg, len(f.nodes), stagger, func(i int) {
		name, path, args := command(mode, f.nodes[i], kubeconfigs[i], p.rootDir(i))
		proc, err := controlplane.StartProcess(name, path, args, filepath.Join(p.logDir, f.nodes[i].Name+".log"), controlplane.ProcessOptions{})
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil || ctx.Err() != nil {
			if proc != nil {
				proc.Stop(kubeletGrace)
			}
			if err != nil && ctx.Err() == nil {
				p.startErr = fmt.Errorf("starting %s's %s: %w", f.nodes[i].Name, name, err)
			}
			return
		}
		p.procs = append(p.procs, proc)
	})
	return p, nil
}

// phase is the processes of one mode.
type phase struct {
	fleet       *Fleet
	mode        modes.Mode
	dir, logDir string
	cancel      context.CancelFunc
	wg          sync.WaitGroup

	mu        sync.Mutex
	procs     []*controlplane.Process
	startErr  error // a process that could not be started
	cpuAtMark time.Duration
	marked    bool
}

// writeKubeconfigs writes each node's kubeconfig, with its own identity.
func (p *phase) writeKubeconfigs() ([]string, error) {
	if err := os.MkdirAll(p.logDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(p.dir, "kubeconfigs"), 0o700); err != nil {
		return nil, err
	}
	kubeconfigs := make([]string, len(p.fleet.nodes))
	for i, node := range p.fleet.nodes {
		cfg, err := p.fleet.identity(node.Name)
		if err != nil {
			return nil, err
		}
		kubeconfigs[i] = filepath.Join(p.dir, "kubeconfigs", node.Name)
		if err := controlplane.WriteKubeconfig(kubeconfigs[i], cfg); err != nil {
			return nil, err
		}
	}
	return kubeconfigs, nil
}

// rootDir is node i's root directory in this phase.
func (p *phase) rootDir(i int) string {
	return filepath.Join(p.dir, fmt.Sprintf("%03d", i))
}

// LocalRoots are the processes' root directories on this machine.
func (p *phase) LocalRoots() map[string]string {
	roots := map[string]string{}
	for i, node := range p.fleet.nodes {
		roots[node.Name] = p.rootDir(i)
	}
	return roots
}

// VolumesMounted counts, under every process's root directory, the
// ConfigMap and projected volumes whose ..data link is in place.
func (p *phase) VolumesMounted(ctx context.Context) (int, error) {
	if err := p.exited(); err != nil {
		return 0, err
	}
	byNode, _, err := p.VolumesMountedByNode(ctx)
	total := 0
	for _, n := range byNode {
		total += n
	}
	return total, err
}

// VolumesMountedByNode counts VolumesMounted's volumes node by node, and
// says where each node's log is, for a warm-up that stalls to name the
// nodes behind.
func (p *phase) VolumesMountedByNode(context.Context) (map[string]int, string, error) {
	byNode := map[string]int{}
	for i, node := range p.fleet.nodes {
		for _, plugin := range podrefs.Plugins {
			found, err := filepath.Glob(filepath.Join(podrefs.VolumeDir(p.rootDir(i), "*", plugin, "*"), "..data"))
			if err != nil {
				return nil, "", err
			}
			byNode[node.Name] += len(found)
		}
	}
	return byNode, p.logDir, nil
}

// exited reports a process that died, with the end of its log.
func (p *phase) exited() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.startErr != nil {
		return p.startErr
	}
	for _, proc := range p.procs {
		if err := proc.Err(); err != nil {
			return fmt.Errorf("a process of the fleet died: %w\n%s", err, proc.Tail(20))
		}
	}
	return nil
}

// Counters reads the processes' CPU time and resident memory from /proc;
// their requests come from the audit log. The first call also restarts
// the processes' peak-RSS counters, so that the warm-up is not in the
// peak.
func (p *phase) Counters(context.Context) (compare.Counters, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.marked {
		for _, proc := range p.procs {
			_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", proc.Pid()), []byte("5"), 0)
		}
	}
	c := compare.Counters{Resources: results.ResourcesOwn}
	var cpu time.Duration
	for _, proc := range p.procs {
		u := procstat.Of(proc.Pid())
		cpu += u.CPU
		c.PeakRSSBytes += u.PeakRSS
		c.RSSBytes += u.RSS
	}
	if !p.marked {
		p.marked, p.cpuAtMark = true, cpu
	}
	c.CPUSeconds = (cpu - p.cpuAtMark).Seconds()
	return c, nil
}

// Stop ends the processes and removes their root directories.
func (p *phase) Stop() {
	p.cancel()
	p.wg.Wait()
	p.mu.Lock()
	procs := p.procs
	p.procs = nil
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, proc := range procs {
		wg.Go(func() { proc.Stop(kubeletGrace) })
	}
	wg.Wait()
	_ = os.RemoveAll(p.dir)
	p.reportSyncErrors()
}

// reportSyncErrors says when the phase's processes failed pod syncs: a
// failed sync is retried after a back-off, not after the sync period, so
// their requests would not be the kubelet's steady state.
func (p *phase) reportSyncErrors() {
	logs, _ := filepath.Glob(filepath.Join(p.logDir, "*.log"))
	failed := 0
	for _, path := range logs {
		data, err := os.ReadFile(path)
		if err == nil {
			// The kubelet's words, and nodeagent's.
			failed += strings.Count(string(data), `"Error syncing pod, skipping"`) + strings.Count(string(data), `"Syncing pod failed; will retry"`)
		}
	}
	if failed > 0 {
		p.fleet.progress.Done("%-19s warning: the processes logged %d failed pod syncs, which change their request rate; see %s",
			p.mode, failed, p.logDir)
	}
}
