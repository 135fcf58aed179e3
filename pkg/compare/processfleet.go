package compare

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager"
)

// processFleet runs one process per simulated node, each with that node's
// own identity: the real kubelet (refkubelet) for the reference modes
// (kubeletCommand), or nodeagent's own `run` (agentCommand), so that each
// agent's CPU time and memory are its own. The processes' metrics are not
// read here; the apiserver's audit log counts their requests, and /proc
// their CPU time and memory.
type processFleet struct {
	scenario Scenario
	nodes    []model.Node
	command  commandFunc
	identity func(node string) (*rest.Config, error)
	// workDir, a temporary directory made at the first start and removed
	// at cleanup, holds each phase's root directories (removed at stop);
	// logDir keeps the kubelets' logs.
	workDir, logDir string
	progress        *progress

	mu        sync.Mutex
	procs     []*controlplane.Process
	phaseDir  string
	mode      Mode
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	cpuAtMark time.Duration
	marked    bool
}

// kubeletGrace is how long a reference kubelet gets to exit on SIGTERM.
const kubeletGrace = 5 * time.Second

// checkProcesses fails early, saying what to build or lower, when a run
// of nodes processes cannot start: the reference kubelets of modes (in
// binDir) or nodeagent's agentBinary is missing, or the processes would
// not fit in this machine's memory.
func checkProcesses(nodes int, modes []Mode, binDir, agentBinary string) error {
	for _, m := range modes {
		kubelet := m.spec().kubelet
		if kubelet == nil {
			continue
		}
		if info, err := os.Stat(filepath.Join(binDir, kubelet.binary())); err != nil || info.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("mode %s needs %s in %s: run `make refkubelet` to build the reference kubelets", m, kubelet.binary(), binDir)
		}
	}
	if agentBinary != "" {
		if info, err := os.Stat(agentBinary); err != nil || info.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("the agents' processes need nodeagent's binary at %s: run `make build`", agentBinary)
		}
	}
	return checkMemory(nodes, agentBinary == "" && slices.ContainsFunc(modes, Mode.IsReferenceKubelet))
}

// Resident memory of one process with a node's pods, rounded up from
// docs/performance.md's idle figures with 110 pods (the full nodeagent
// binary's, which --agent-binary may name, and the reference kubelets').
const (
	agentProcessBytes   = 64 << 20
	kubeletProcessBytes = 128 << 20
)

// checkMemory refuses a run whose processes would not fit in the memory
// this machine has available: a thousand kubelets need over 100 GiB.
func checkMemory(nodes int, kubelets bool) error {
	perProcess, what := int64(agentProcessBytes), "nodeagent process"
	if kubelets {
		perProcess, what = kubeletProcessBytes, "reference kubelet"
	}
	available := statusKB("/proc/meminfo", "MemAvailable:") << 10
	if need := perProcess * int64(nodes); available > 0 && need > available*4/5 {
		return fmt.Errorf("%d simulated nodes, each its own %s of about %d MiB, need %d MiB; this machine has %d MiB available: lower --nodes to %d or fewer",
			nodes, what, perProcess>>20, need>>20, available>>20, available*4/5/perProcess)
	}
	return nil
}

// commandFunc is the process of node in mode: its name, binary and
// arguments.
type commandFunc func(mode Mode, node model.Node, kubeconfig, rootDir string) (name, path string, args []string)

// agentCommand runs nodeagent's binary, configured as the scenario's
// in-process agents are.
func agentCommand(s Scenario, binary string) commandFunc {
	return func(mode Mode, node model.Node, kubeconfig, rootDir string) (string, string, []string) {
		cfg := s.agentConfig(mode, node.Name, rootDir)
		return "nodeagent", binary, cfg.Command(kubeconfig)
	}
}

// kubeletCommand runs the reference kubelet of mode from binDir, with the
// kubelet's own flags (hack/refkubelet) and the agents' rate limits.
func kubeletCommand(s Scenario, binDir string) commandFunc {
	return func(mode Mode, node model.Node, kubeconfig, rootDir string) (string, string, []string) {
		kubelet := mode.spec().kubelet
		cfg := s.agentConfig(mode, node.Name, rootDir)
		return kubelet.binary(), filepath.Join(binDir, kubelet.binary()), []string{
			"--node-name=" + node.Name,
			"--kubeconfig=" + kubeconfig,
			"--root-dir=" + rootDir,
			"--sync-frequency=" + s.SyncFrequency.String(),
			"--configmap-change-detection-strategy=" + string(kubelet.strategy),
			"--kube-api-qps=" + strconv.FormatFloat(float64(cfg.KubeAPIQPS), 'f', -1, 32),
			"--kube-api-burst=" + strconv.Itoa(cfg.KubeAPIBurst),
			"--max-pods=" + strconv.Itoa(max(110, 2*len(node.Pods))),
		}
	}
}

func (f *processFleet) start(_ context.Context, mode Mode, stagger time.Duration) error {
	if f.workDir == "" {
		// Short: the kubelet makes unix sockets under its root directory,
		// whose paths must fit in 108 bytes.
		dir, err := os.MkdirTemp("", "nodeagent-kubelets-")
		if err != nil {
			return err
		}
		f.workDir = dir
	}
	f.phaseDir = filepath.Join(f.workDir, string(mode))
	logDir := filepath.Join(f.logDir, string(mode))
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(f.phaseDir, "kubeconfigs"), 0o700); err != nil {
		return err
	}
	kubeconfigs := make([]string, len(f.nodes))
	for i, node := range f.nodes {
		cfg, err := f.identity(node.Name)
		if err != nil {
			return err
		}
		kubeconfigs[i] = filepath.Join(f.phaseDir, "kubeconfigs", node.Name)
		if err := controlplane.WriteKubeconfig(kubeconfigs[i], cfg); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel, f.marked, f.procs, f.mode = cancel, false, nil, mode
	staggered(ctx, &f.wg, len(f.nodes), stagger, func(i int) {
		name, path, args := f.command(mode, f.nodes[i], kubeconfigs[i], f.rootDir(i))
		p, err := controlplane.StartProcess(name, path, args, filepath.Join(logDir, f.nodes[i].Name+".log"), controlplane.ProcessOptions{})
		f.mu.Lock()
		defer f.mu.Unlock()
		if err != nil || ctx.Err() != nil {
			if p != nil {
				p.Stop(kubeletGrace)
			}
			return
		}
		f.procs = append(f.procs, p)
	})
	return nil
}

// rootDir is node i's root directory in the current phase.
func (f *processFleet) rootDir(i int) string {
	return filepath.Join(f.phaseDir, fmt.Sprintf("%03d", i))
}

func (f *processFleet) localRoots() map[string]string {
	roots := map[string]string{}
	for i, node := range f.nodes {
		roots[node.Name] = f.rootDir(i)
	}
	return roots
}

// volumesMounted counts, under every kubelet's root directory, the
// ConfigMap and projected volumes whose ..data link is in place.
func (f *processFleet) volumesMounted(context.Context) (int, error) {
	if err := f.exited(); err != nil {
		return 0, err
	}
	matches := 0
	for _, plugin := range volumemanager.Plugins {
		found, err := filepath.Glob(filepath.Join(volumemanager.VolumeDir(filepath.Join(f.phaseDir, "*"), "*", plugin, "*"), "..data"))
		if err != nil {
			return 0, err
		}
		matches += len(found)
	}
	return matches, nil
}

// exited reports a process that died, with the end of its log.
func (f *processFleet) exited() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.procs {
		if err := p.Err(); err != nil {
			return fmt.Errorf("a process of the fleet died: %w\n%s", err, p.Tail(20))
		}
	}
	return nil
}

// counters reads the processes' CPU time and resident memory from /proc;
// their requests come from the audit log. The first call of a phase also
// restarts the processes' peak-RSS counters, so that the warm-up is not in
// the peak.
func (f *processFleet) counters(context.Context) (agentCounters, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.marked {
		for _, p := range f.procs {
			_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.Pid()), []byte("5"), 0)
		}
	}
	var c agentCounters
	var cpu time.Duration
	for _, p := range f.procs {
		u := processUsage(p.Pid())
		cpu += u.cpu
		c.peakRSSBytes += u.peakRSS
		c.rssBytes += u.rss
	}
	if !f.marked {
		f.marked, f.cpuAtMark = true, cpu
	}
	c.cpuSeconds = (cpu - f.cpuAtMark).Seconds()
	return c, nil
}

func (f *processFleet) stop() {
	if f.cancel != nil {
		f.cancel()
	}
	f.wg.Wait()
	f.mu.Lock()
	procs := f.procs
	f.procs = nil
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() { p.Stop(kubeletGrace) })
	}
	wg.Wait()
	if f.phaseDir != "" {
		_ = os.RemoveAll(f.phaseDir)
	}
	f.reportSyncErrors()
}

// reportSyncErrors says when the phase's kubelets failed pod syncs: a
// failed sync is retried after a back-off, not after the sync period, so
// their requests would not be the kubelet's steady state.
func (f *processFleet) reportSyncErrors() {
	logs, _ := filepath.Glob(filepath.Join(f.logDir, string(f.mode), "*.log"))
	failed := 0
	for _, path := range logs {
		data, err := os.ReadFile(path)
		if err == nil {
			// The kubelet's words, and nodeagent's.
			failed += strings.Count(string(data), `"Error syncing pod, skipping"`) + strings.Count(string(data), `"Syncing pod failed; will retry"`)
		}
	}
	if failed > 0 && f.progress != nil {
		f.progress.done("%-19s warning: the processes logged %d failed pod syncs, which change their request rate; see %s",
			f.mode, failed, filepath.Join(f.logDir, string(f.mode)))
	}
}

// usage is what a process has used: CPU time (user and system), resident
// memory now (VmRSS) and at its peak (VmHWM).
type usage struct {
	cpu          time.Duration
	rss, peakRSS int64
}

// processUsage reads a process's usage from /proc.
func processUsage(pid int) usage {
	if pid == 0 {
		return usage{}
	}
	var cpu time.Duration
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// Fields after the parenthesised command name; utime and stime are
		// the 14th and 15th fields, in clock ticks (100 per second).
		if end := strings.LastIndexByte(string(stat), ')'); end > 0 {
			fields := strings.Fields(string(stat)[end+1:])
			if len(fields) > 12 {
				utime, _ := strconv.ParseInt(fields[11], 10, 64)
				stime, _ := strconv.ParseInt(fields[12], 10, 64)
				cpu = time.Duration(utime+stime) * 10 * time.Millisecond
			}
		}
	}
	status := fmt.Sprintf("/proc/%d/status", pid)
	return usage{cpu: cpu, rss: statusKB(status, "VmRSS:") * 1024, peakRSS: statusKB(status, "VmHWM:") * 1024}
}

// statusKB reads one "Name: N kB" line of a /proc status file.
func statusKB(path, field string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) >= 2 && fields[0] == field {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb
		}
	}
	return 0
}

func (f *processFleet) prepare(_ context.Context, own []model.Node) ([]model.Node, error) {
	return own, nil
}

func (f *processFleet) cleanup(bool) {
	if f.workDir != "" {
		_ = os.RemoveAll(f.workDir)
	}
}

// warmup allows for the kubelets' start (node registration, informers'
// sync) and asks every second: each ask walks every root directory.
func (f *processFleet) warmup() (extra, poll time.Duration) {
	return 30 * time.Second, time.Second
}
