package results

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/compare/attribution"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
)

func sampleReport() *Report {
	r := &Report{Scenario: ScenarioReport{Nodes: 20, PodsPerNode: 10, ConfigMapsPerPod: 1, SyncFrequencySeconds: 5, TTLSeconds: 25,
		PhaseSeconds: 60, Modes: []modes.Mode{modes.EverySync, modes.FirstReference, modes.Watch}, APIServer: "test", PodPhases: "mixed"}}
	for i, m := range r.Scenario.Modes {
		api, etcd := 30.0/float64(i+1), 30.0/float64(i+1)
		if m != modes.EverySync {
			etcd = 0
		}
		p := PhaseResult{Mode: m, Description: m.Describe(), APIServerGetQPS: api * 0.98, EtcdGetQPS: etcd, ExpectedAPIServerQPS: api,
			ExpectedEtcdQPS: etcd, MeasuredSeconds: 60, TTLSeconds: 25}
		for t := 5; t <= 60; t += 5 {
			p.Samples = append(p.Samples, Sample{Seconds: float64(t), APIServerQPS: api + float64(i), EtcdQPS: etcd})
		}
		r.Phases = append(r.Phases, p)
	}
	return r
}

// report.json keeps its keys, which tools read: new ones may be added, none renamed.
func TestReportFilesAndKeys(t *testing.T) {
	dir := t.TempDir()
	r := sampleReport()
	if err := r.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"report.json", "report.md", "chart.svg", "chart.png"} {
		if info, err := os.Stat(filepath.Join(dir, name)); err != nil || info.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	data, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	var generic map[string]any
	if err := json.Unmarshal(data, &generic); err != nil {
		t.Fatal(err)
	}
	scenario := generic["scenario"].(map[string]any)
	for _, key := range []string{"nodes", "pods_per_node", "configmaps_per_pod", "sync_frequency_seconds", "ttl_seconds", "phase_seconds"} {
		if _, ok := scenario[key]; !ok {
			t.Errorf("scenario lacks %q", key)
		}
	}
	phase := generic["phases"].([]any)[0].(map[string]any)
	for _, key := range []string{"mode", "strategy", "warmup_seconds", "apiserver_configmap_get_total", "apiserver_configmap_get_qps",
		"etcd_configmap_get_total", "etcd_configmap_get_qps", "expected_apiserver_configmap_get_qps", "agent_configmap_get_total",
		"agent_cpu_seconds", "agent_peak_rss_bytes"} {
		if _, ok := phase[key]; !ok {
			t.Errorf("phase lacks %q", key)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"| every-sync |", "| first-reference |", "chart.svg"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	var table strings.Builder
	r.WriteTable(&table)
	if lines := strings.Count(table.String(), "\n"); lines != 1+len(r.Phases) {
		t.Errorf("table has %d lines, want %d:\n%s", lines, 1+len(r.Phases), table.String())
	}
}

// A report written before every mode was measured says which were not.
func TestReportSaysWhatWasNotMeasured(t *testing.T) {
	r := sampleReport()
	r.NotMeasured = []modes.Mode{r.Phases[len(r.Phases)-1].Mode}
	r.Phases = r.Phases[:len(r.Phases)-1]
	md := r.Markdown()
	want := "Not measured: `" + string(r.NotMeasured[0]) + "`"
	if !strings.Contains(md, want) {
		t.Errorf("report.md lacks %q:\n%s", want, md)
	}
	if strings.Contains(sampleReport().Markdown(), "Not measured") {
		t.Error("a complete report says something was not measured")
	}
}

// The table of object classes shows the interval columns only for a
// report that measured them, so that records kept before keep their table.
func TestClassTableShowsIntervalsWhereMeasured(t *testing.T) {
	r := sampleReport()
	r.Phases[0].Audit = &AuditResult{Classes: []attribution.ClassResult{{Class: attribution.ClassRootCA, GetQPS: 0.925, ExpectedQPS: 0.923}}}
	var before strings.Builder
	r.WriteTable(&before)
	if strings.Contains(before.String(), "s between reads") || !strings.Contains(before.String(), "kube-root-ca.crt") {
		t.Errorf("a report without intervals:\n%s", before.String())
	}
	r.Phases[0].Audit.Classes[0].IntervalSeconds, r.Phases[0].Audit.Classes[0].ExpectedIntervalSeconds = 32.99, 32.51
	var after strings.Builder
	r.WriteTable(&after)
	if !strings.Contains(after.String(), "s between reads") || !strings.Contains(after.String(), "32.99    32.51         0.99") {
		t.Errorf("a report with intervals lacks its columns:\n%s", after.String())
	}
}
