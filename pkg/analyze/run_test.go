package analyze

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory/inventorytest"
)

// Run reads the fake cluster end to end; the JSON has the keys tools read
// and never a Secret's data; text and Markdown show every section.
func TestRunAndRender(t *testing.T) {
	o := DefaultOptions()
	o.ReadConfigz = false
	o.Assume.Strategy = model.StrategyCache
	r, err := Run(context.Background(), inventorytest.FakeCluster(), o)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Nodes[0]; n.Behaviour != model.EverySync || n.SettingsSource != Assumed || n.Pods != 1 {
		t.Errorf("node %+v; want every-sync, assumed, one pod", n)
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"nodes":[{"name":"node","kubeletVersion":"v1.28.15","strategy":"Cache","syncFrequencySeconds":60,"ttlSeconds":0,"settingsSource":"assumed"`,
		`"total":{"predicted":{"configmaps":{"apiserverGetsPerSecond":`, `"quorumGetsPerSecond":`, `"etcdReadsPerSecond":`, `"watches":`,
		`"whatIfs":[{"name":"upgrade-to-v1.29"`, `"secrets":{`,
		`"updateDelaySeconds":{"median":`, `"findings":[]`, `"summary":{"findings":{"driverVolumeFailing":0,"envNeverUpdated":0,`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("report.json lacks %s:\n%s", key, data)
		}
	}
	if strings.Contains(string(data), "hunter2") {
		t.Error("report.json holds a Secret's data")
	}
	var text bytes.Buffer
	if err := r.WriteText(&text, 10); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Predicted load", "What if", "upgrade-to-v1.29", "Busiest nodes (1 of 1)", "ConfigMap ns/frozen", "root CA", "assumed",
		"1 node, ", " in 1 namespace;", "reaches the volumes that mount it in", "Findings: configuration that does not reach containers"} {
		if !strings.Contains(text.String(), want) || !strings.Contains(r.Markdown(10)+text.String(), want) {
			t.Errorf("the text report lacks %q:\n%s", want, text.String())
		}
	}
	dir := t.TempDir()
	if err := r.WriteDir(dir, 10); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.json", "report.md", "chart.svg", "chart.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}
