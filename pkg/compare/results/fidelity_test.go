package results

import (
	"strings"
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
)

func TestFidelityLines(t *testing.T) {
	r := &Report{Scenario: ScenarioReport{Nodes: 10}}
	r.Phases = []PhaseResult{
		{Mode: modes.KubeletV128, APIServerGetQPS: 40, EtcdGetQPS: 40, MeasuredSeconds: 60, AgentCPUSeconds: 6, AgentPeakRSSBytes: 10 * 80 << 20,
			Audit: &AuditResult{QuorumGetQPS: 40}},
		{Mode: modes.EverySync, APIServerGetQPS: 38, EtcdGetQPS: 38, MeasuredSeconds: 60, AgentCPUSeconds: 3, AgentPeakRSSBytes: 10 * 20 << 20,
			Audit: &AuditResult{QuorumGetQPS: 38}},
		{Mode: modes.FirstReference, APIServerGetQPS: 5},
	}
	lines := r.fidelity()
	if len(lines) != 1 {
		t.Fatalf("want one line (first-reference has no kubelet-v1.37 beside it), got %q", lines)
	}
	for _, want := range []string{"every-sync vs kubelet-v1.28", "apiserver GET/s 38.00 / 40.00 (0.95)", "quorum GET/s (audit) 38.00 / 40.00 (0.95)",
		"mcores/node 5.0 / 10.0", "MiB/node 20.0 / 80.0"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("fidelity line %q lacks %q", lines[0], want)
		}
	}
	if md := r.Markdown(); !strings.Contains(md, "Fidelity") {
		t.Error("report.md has no fidelity section")
	}
}

// The kubelet's Watch strategy pairs with watch-at-sync, its behaviour, and
// with watch when the run has only that: their requests are the same.
func TestFidelityPairsTheWatchStrategy(t *testing.T) {
	for _, agentMode := range []modes.Mode{modes.WatchAtSync, modes.Watch} {
		r := &Report{Scenario: ScenarioReport{Nodes: 1}, Phases: []PhaseResult{{Mode: modes.KubeletV137Watch}, {Mode: agentMode}}}
		lines := r.fidelity()
		if len(lines) != 1 || !strings.HasPrefix(lines[0], string(agentMode)+" vs kubelet-v1.37-watch") {
			t.Errorf("with %s: fidelity lines %q", agentMode, lines)
		}
	}
}
