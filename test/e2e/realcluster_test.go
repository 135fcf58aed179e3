//go:build e2e

package e2e

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/pkg/compare"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/compare/processes"
)

// TestModelAtRealClusterSettings holds the load model to the real kubelet
// v1.37 where real clusters between 100 and 2,000 nodes run: S = 1 m, the
// TTL controller's T = 30 s below it, thirty pods a node, each with a
// ConfigMap of its own and the service-account volume. There every sync
// refreshes a pod's own ConfigMap (T is shorter than any sync interval),
// and the node's thirty pods share one cached kube-root-ca.crt, refreshed
// by the first remount after it expires. The window is short for S = 1 m
// (three minutes: 2.4 syncs a pod, 5.5 refreshes of a node's shared
// entry), so the run has thirty nodes at once; compare mixes the pods'
// phases first, as on a node that has run a while. Each object class's
// mean interval between a node's reads of one object, by the audit log,
// must be within 5 % of the model's: the count of reads in so short a
// window moves by a few per cent with where each node's cycle falls, the
// interval does not (pkg/compare/attribution's intervals.go).
func TestModelAtRealClusterSettings(t *testing.T) {
	// A guard against a hang, not a budget: compare itself gives up when
	// the kubelets stop mounting volumes, and a slower machine takes
	// longer to mount 1,800 of them.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	binDir, err := controlplane.FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	s := compare.DefaultScenario()
	s.Nodes, s.PodsPerNode = 30, 30
	s.SyncFrequency, s.TTL = time.Minute, 30*time.Second
	s.PhaseDuration, s.SampleInterval = 3*time.Minute, 15*time.Second
	s.Modes = []modes.Mode{modes.KubeletV137}
	kubelets, err := processes.Kubelets(binDir, cp.NodeRESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	// The output stays for a reader of a failure: every kubelet's whole log
	// is under it.
	out := filepath.Join(repoRoot(t), "_output", "e2e", "real-cluster")
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	report, err := compare.Run(ctx, compare.Options{
		Scenario: s, Kubelets: kubelets, RESTConfig: cp.RESTConfig(), APIServer: "e2e", OutputDir: out, Namespace: "real-cluster",
		AuditLog: cp.AuditLogPath(),
	})
	if err != nil {
		logNodesNamedIn(t, err, out)
		t.Fatal(err)
	}
	p := report.Phases[0]
	if p.Audit == nil || len(p.Audit.Classes) != 2 {
		t.Fatalf("audit %+v: want the GETs of both object classes", p.Audit)
	}
	for _, c := range p.Audit.Classes {
		ratio := c.ExpectedIntervalSeconds / c.IntervalSeconds
		t.Logf("%s: %.3f GET/s (quorum %.3f), model %.3f; a read every %.2f s, model %.2f: %.3f",
			c.Class, c.GetQPS, c.QuorumGetQPS, c.ExpectedQPS, c.IntervalSeconds, c.ExpectedIntervalSeconds, ratio)
		if c.IntervalSeconds == 0 || math.Abs(ratio-1) > 0.05 {
			t.Errorf("%s: the kubelet read each object every %.2f s, the model says %.2f (%.3f): want within 5 %%",
				c.Class, c.IntervalSeconds, c.ExpectedIntervalSeconds, ratio)
		}
		if c.QuorumGetQPS > 0.01*c.GetQPS {
			t.Errorf("%s: %.3f of %.3f GET/s were quorum reads: after kubernetes#120255 a refresh reads the watch cache", c.Class, c.QuorumGetQPS, c.GetQPS)
		}
	}
}

// logNodesNamedIn logs the end of the log of every node that err names as
// behind ("NAME (k of n)"), and where its whole log stays.
func logNodesNamedIn(t *testing.T, err error, out string) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(out, "*", "*", "*.log"))
	for _, path := range logs {
		node := strings.TrimSuffix(filepath.Base(path), ".log")
		if !strings.Contains(err.Error(), node+" (") {
			continue
		}
		data, readErr := os.ReadFile(path)
		if readErr != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		t.Logf("%s (kept), its last lines:\n%s", path, strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
}
