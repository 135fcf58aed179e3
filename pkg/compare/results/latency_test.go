package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/compare/updateprobe"
)

func TestLatencyReport(t *testing.T) {
	r := &Report{Scenario: ScenarioReport{PodsPerNode: 1000, SyncFrequencySeconds: 60, UpdateRate: 5}, Phases: []PhaseResult{
		{Mode: modes.Watch, Latency: &updateprobe.Result{Updates: 900, Samples: 18000, P50Seconds: 0.1, P99Seconds: 0.113, MaxSeconds: 0.2, APIWriteP99Seconds: 0.012, ModelP50Seconds: 38, ModelP99Seconds: 88, BoundSeconds: 91.15, SampleSeconds: []float64{0.1, 0.113, 0.2}}},
		{Mode: modes.FirstReference},
	}}
	md := r.Markdown()
	for _, want := range []string{"## Update latency", "| watch | 900 | 18000 | 100 ms | 113 ms | 200 ms | 38.0 s | 88.0 s | 91.2 s | 0 | 12 ms |", "latency.svg"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if rows := r.LatencyTable().Rows; len(rows) != 1 {
		t.Errorf("%d latency rows, want watch's", len(rows))
	}
	dir := t.TempDir()
	if err := r.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "latency.svg")); err != nil {
		t.Error(err)
	}
}
