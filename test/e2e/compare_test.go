//go:build e2e

package e2e

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/compare"
)

// A short comparison with the real binary against the test control plane.
// The bounds are loose: this guards against regressions, `make demo` and
// the scale run hold the figures.
func TestCompareShortRun(t *testing.T) {
	out := t.TempDir()
	cmd := exec.Command(nodeagentBinary(t), "compare",
		"--kubeconfig="+cp.KubeconfigPath,
		"--nodes=4", "--pods-per-node=5", "--sync-frequency=2s", "--ttl=6s",
		"--phase-duration=24s", "--sample-interval=3s",
		"--modes=every-sync,first-reference,watch",
		"--output-dir="+out)
	output, err := cmd.CombinedOutput()
	t.Logf("nodeagent compare:\n%s", output)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"report.json", "report.md", "chart.svg", "chart.png"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("missing %s: %v", name, err)
		}
	}
	if !strings.Contains(string(output), "measured/model") {
		t.Error("no results table on stdout")
	}
	data, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var report compare.Report
	if err := json.Unmarshal(data, &report); err != nil {
		t.Fatal(err)
	}
	if len(report.Phases) != 3 {
		t.Fatalf("%d phases, want 3", len(report.Phases))
	}
	before, after, watch := report.Phases[0], report.Phases[1], report.Phases[2]

	for _, p := range report.Phases {
		// The agents' own counters agree with the apiserver's (requests in
		// flight at the window's edges may land on either side).
		if math.Abs(p.AgentGetTotal-p.APIServerGetTotal) > 3+0.05*p.APIServerGetTotal {
			t.Errorf("%s: agents counted %v GETs, apiserver %v", p.Mode, p.AgentGetTotal, p.APIServerGetTotal)
		}
		if p.ExpectedAPIServerQPS > 0 {
			if r := p.APIServerGetQPS / p.ExpectedAPIServerQPS; r < 0.6 || r > 1.4 {
				t.Errorf("%s: measured %.2f GET/s, model %.2f (ratio %.2f)", p.Mode, p.APIServerGetQPS, p.ExpectedAPIServerQPS, r)
			}
		}
	}
	// Before the fix every GET reaches etcd.
	if math.Abs(before.EtcdGetTotal-before.APIServerGetTotal) > 3+0.05*before.APIServerGetTotal {
		t.Errorf("every-sync: %v etcd reads for %v GETs, want one each", before.EtcdGetTotal, before.APIServerGetTotal)
	}
	// After it, etcd sees (almost) nothing and the apiserver much less.
	if after.EtcdGetQPS > 0.1 || after.APIServerGetQPS > 0.7*before.APIServerGetQPS {
		t.Errorf("first-reference: %.2f GET/s, %.2f etcd/s; every-sync %.2f GET/s", after.APIServerGetQPS, after.EtcdGetQPS, before.APIServerGetQPS)
	}
	if watch.AgentGetTotal != 0 || watch.EtcdGetQPS > 0.1 {
		t.Errorf("watch: %v agent GETs, %.2f etcd/s; want none", watch.AgentGetTotal, watch.EtcdGetQPS)
	}
}

func TestCompareRejectsImpossibleScenarios(t *testing.T) {
	for _, args := range [][]string{
		{"--nodes=0"},
		{"--phase-duration=-1s"},
		{"--modes=every-sync,poll"},
		{"--pods-per-node=500"},
	} {
		cmd := exec.Command(nodeagentBinary(t), append([]string{"compare", "--kubeconfig=/nonexistent"}, args...)...)
		output, err := cmd.CombinedOutput()
		if err == nil || strings.Contains(string(output), "kubeconfig") {
			t.Errorf("%v: want a failure about the scenario before any connection, got %v: %s", args, err, output)
		}
	}
}
