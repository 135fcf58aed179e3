package processes

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/compare/results"
)

// The memory a run plans for each process is at least what one process
// with 110 pods was measured to need at its peak (the record idle-1m), and
// not so far above it that the check refuses runs the machine could serve.
func TestMemoryBoundsHoldTheRecord(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "runs", "idle-1m.json"))
	if err != nil {
		t.Fatal(err)
	}
	var record struct {
		Report results.Report `json:"report"`
	}
	if err := json.Unmarshal(data, &record); err != nil {
		t.Fatal(err)
	}
	if !record.Report.Scenario.AgentProcesses || record.Report.Scenario.Nodes != 1 || record.Report.Scenario.PodsPerNode != 110 {
		t.Fatalf("idle-1m is no longer one process with 110 pods: %+v", record.Report.Scenario)
	}
	var agentPeak, kubeletPeak int64
	for _, p := range record.Report.Phases {
		if p.Mode.IsReferenceKubelet() {
			kubeletPeak = max(kubeletPeak, p.AgentPeakRSSBytes)
		} else {
			agentPeak = max(agentPeak, p.AgentPeakRSSBytes)
		}
	}
	for _, c := range []struct {
		what        string
		bound, peak int64
	}{{"nodeagent", agentProcessBytes, agentPeak}, {"reference kubelet", kubeletProcessBytes, kubeletPeak}} {
		if c.peak == 0 || c.bound < c.peak || c.bound > 3*c.peak {
			t.Errorf("a %s process is planned at %d MiB; idle-1m measured %d MiB at its peak: keep the bound between 1 and 3 times the peak",
				c.what, c.bound>>20, c.peak>>20)
		}
	}
}
