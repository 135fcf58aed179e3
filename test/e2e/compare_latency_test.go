//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/compare"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/compare/processes"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// compare --update-rate on real agents: every update reaches every volume
// that mounts it; with remount-on-change in milliseconds, at the next sync
// otherwise; and the report carries the latency table.
func TestCompareUpdateLatency(t *testing.T) {
	out := t.TempDir()
	output := runCompare(t, "compare-latency", out,
		"--nodes=1", "--pods-per-node=10", "--shared-configmaps=2", "--sync-frequency=5s",
		"--phase-duration=15s", "--sample-interval=5s", "--update-rate=4", "--modes=watch,watch-at-sync")
	report := e2eutil.ReadReport(t, out)
	if len(report.Phases) != 2 {
		t.Fatalf("%d phases, want 2", len(report.Phases))
	}
	for _, p := range report.Phases {
		l := p.Latency
		switch {
		case l == nil:
			t.Fatalf("%s: no latency in the report", p.Mode)
		case l.Updates < 20 || l.Samples < 5*l.Updates || l.Unseen != 0:
			// Five pods mount each ConfigMap.
			t.Errorf("%s: %d updates, %d samples, %d not on disk; want 20 or more updates, five samples each, all on disk", p.Mode, l.Updates, l.Samples, l.Unseen)
		}
	}
	watch, atSync := report.Phases[0].Latency, report.Phases[1].Latency
	if watch.P99Seconds > 2 {
		t.Errorf("watch with remount-on-change: p99 %.3fs, want well under the sync period", watch.P99Seconds)
	}
	// The next sync: about half a mean sync interval (6.75 s) away.
	if atSync.P50Seconds < 1 || atSync.MaxSeconds > atSync.BoundSeconds+2 {
		t.Errorf("watch-at-sync: p50 %.1fs, max %.1fs, bound %.1fs; want the next sync's wait", atSync.P50Seconds, atSync.MaxSeconds, atSync.BoundSeconds)
	}
	for _, want := range []string{"Update latency", "watch-at-sync"} {
		if !strings.Contains(output, want) {
			t.Errorf("compare's output lacks %q", want)
		}
	}
}

// compare with agents as processes of their own (--agent-processes): the
// requests come from the audit log, and the CPU and memory are the
// processes' own.
func TestCompareAgentProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := compare.DefaultScenario()
	s.Nodes, s.PodsPerNode, s.PhaseDuration, s.Modes = 2, 5, 15*time.Second, []modes.Mode{modes.EverySync}
	agents, err := processes.Agents(e2eutil.NodeagentBinary(t), cp.NodeRESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	report, err := compare.Run(ctx, compare.Options{
		Scenario: s, Agents: agents, RESTConfig: cp.RESTConfig(), APIServer: "e2e", OutputDir: t.TempDir(), Namespace: "compare-processes",
		AuditLog: cp.AuditLogPath(),
	})
	if err != nil {
		t.Fatal(err)
	}
	p := report.Phases[0]
	if !report.Scenario.AgentProcesses || p.AgentCPUSeconds <= 0 || p.AgentRSSBytes < 10<<20 || p.AgentPeakRSSBytes < p.AgentRSSBytes {
		t.Errorf("agent processes %v, CPU %.2fs, RSS %d, peak %d: want each process's own figures", report.Scenario.AgentProcesses, p.AgentCPUSeconds, p.AgentRSSBytes, p.AgentPeakRSSBytes)
	}
	if p.Audit == nil || p.Audit.QuorumGetQPS <= 0 {
		t.Errorf("audit %+v: want the agents' quorum GETs, attributed to their nodes", p.Audit)
	}
}
