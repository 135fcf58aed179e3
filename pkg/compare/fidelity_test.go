package compare

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

func TestReferenceModesPairWithTheirCounterparts(t *testing.T) {
	for ref, agentMode := range map[Mode]Mode{
		ModeKubeletV128: ModeEverySync, ModeKubeletV136: ModeFirstReference, ModeKubeletV136Watch: ModeWatchAtSync,
	} {
		if !ref.IsReferenceKubelet() || agentMode.IsReferenceKubelet() {
			t.Errorf("%s / %s: IsReferenceKubelet wrong", ref, agentMode)
		}
		if pairs := ref.spec().pairsWith; pairs[0] != agentMode {
			t.Errorf("%s pairs first with %v, want %s", ref, pairs, agentMode)
		}
		// The model of a reference kubelet is its counterpart's.
		s := DefaultScenario()
		nodes := Layout(s, DefaultNamespace)
		ttls := sameTTL(nodes, s.TTL)
		refLoad := Prediction(nodes, s.SyncFrequency, ref, ttls).ByKind[model.ConfigMap]
		load := Prediction(nodes, s.SyncFrequency, agentMode, ttls).ByKind[model.ConfigMap]
		// The model sums a map: the order, and so the last bits, vary.
		if !nearlyEqual(refLoad.APIServerGetQPS, load.APIServerGetQPS) || !nearlyEqual(refLoad.EtcdGetQPS, load.EtcdGetQPS) || refLoad.Watches != load.Watches {
			t.Errorf("%s: model %+v, %s's %+v", ref, refLoad, agentMode, load)
		}
		// The kubelet's behaviour, from the model's table of releases
		// and strategies, is the behaviour of the agents it pairs with.
		if rb, ab := ref.spec().behaviour, agentMode.spec().behaviour; rb != ab {
			t.Errorf("%s behaves as %s, %s as %s", ref, rb, agentMode, ab)
		}
	}
	if _, err := ParseModes("kubelet-v1.28,every-sync,kubelet-v1.36,first-reference"); err != nil {
		t.Error(err)
	}
	if k := ModeKubeletV136Watch.spec().kubelet; k.Binary() != "refkubelet-v1.36" || k.Strategy != "Watch" {
		t.Errorf("kubelet-v1.36-watch runs %s with %s", k.Binary(), k.Strategy)
	}
	if k := ModeKubeletV128.spec().kubelet; k.Binary() != "refkubelet-v1.28" || ModeKubeletV128.spec().behaviour != model.EverySync {
		t.Errorf("kubelet-v1.28 runs %s, behaving as %s", k.Binary(), ModeKubeletV128.spec().behaviour)
	}
}

func TestFidelityLines(t *testing.T) {
	r := &Report{Scenario: ScenarioReport{Nodes: 10}}
	r.Phases = []PhaseResult{
		{Mode: ModeKubeletV128, APIServerGetQPS: 40, EtcdGetQPS: 40, MeasuredSeconds: 60, AgentCPUSeconds: 6, AgentPeakRSSBytes: 10 * 80 << 20,
			Audit: &AuditResult{QuorumGetQPS: 40}},
		{Mode: ModeEverySync, APIServerGetQPS: 38, EtcdGetQPS: 38, MeasuredSeconds: 60, AgentCPUSeconds: 3, AgentPeakRSSBytes: 10 * 20 << 20,
			Audit: &AuditResult{QuorumGetQPS: 38}},
		{Mode: ModeFirstReference, APIServerGetQPS: 5},
	}
	lines := r.fidelity()
	if len(lines) != 1 {
		t.Fatalf("want one line (first-reference has no kubelet-v1.36 beside it), got %q", lines)
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

// Every mode has its own visible colour in the chart.
func TestEveryModeHasAColour(t *testing.T) {
	seen := map[string]Mode{}
	for _, m := range Modes {
		c := m.spec().colour
		if c.A == 0 {
			t.Errorf("mode %s has no colour", m)
		}
		key := fmt.Sprint(c)
		if other, dup := seen[key]; dup {
			t.Errorf("modes %s and %s share a colour", m, other)
		}
		seen[key] = m
	}
}

func nearlyEqual(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// The kubelet's Watch strategy pairs with watch-at-sync, its behaviour, and
// with watch when the run has only that: their requests are the same.
func TestFidelityPairsTheWatchStrategy(t *testing.T) {
	for _, agentMode := range []Mode{ModeWatchAtSync, ModeWatch} {
		r := &Report{Scenario: ScenarioReport{Nodes: 1}, Phases: []PhaseResult{{Mode: ModeKubeletV136Watch}, {Mode: agentMode}}}
		lines := r.fidelity()
		if len(lines) != 1 || !strings.HasPrefix(lines[0], string(agentMode)+" vs kubelet-v1.36-watch") {
			t.Errorf("with %s: fidelity lines %q", agentMode, lines)
		}
	}
}
