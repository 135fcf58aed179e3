package live

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// Past MaxFindingSeries the per-finding series stop and say how many were
// left out, while the counts by type and namespace stay exact.
func TestFindingSeriesAreCapped(t *testing.T) {
	a := New(nil, Options{MaxFindingSeries: 2})
	r := &Report{ComputedAt: time.Unix(1000, 0)}
	for i := range 5 {
		r.Findings = append(r.Findings, analyze.Finding{Type: analyze.SubPathNeverUpdated, Pod: fmt.Sprintf("shop/web-%d", i),
			Container: "app", Node: "n1", Object: analyze.ObjectRef{Kind: model.ConfigMap, Namespace: "shop", Name: "cfg"}})
	}
	r.Nodes = []analyze.NodeResult{{Name: "n1", UpdateDelay: &model.Delay{Median: 1, Max: 2}}}
	a.report.Store(r)
	if n, err := testutil.GatherAndCount(a.reports, "nodeagent_analyze_finding"); err != nil || n != 2 {
		t.Errorf("%d finding series, want the cap of 2", n)
	}
	want := `
# HELP nodeagent_analyze_finding_series_dropped Findings left out of nodeagent_analyze_finding by --max-finding-series.
# TYPE nodeagent_analyze_finding_series_dropped gauge
nodeagent_analyze_finding_series_dropped 3
`
	if err := testutil.GatherAndCompare(a.reports, strings.NewReader(want), "nodeagent_analyze_finding_series_dropped"); err != nil {
		t.Error(err)
	}
	families, err := a.reports.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "nodeagent_analyze_findings" {
			continue
		}
		for _, m := range f.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["type"] == string(analyze.SubPathNeverUpdated) && (labels["namespace"] != "shop" || m.GetGauge().GetValue() != 5) {
				t.Errorf("findings count %v = %v, want 5 in shop", labels, m.GetGauge().GetValue())
			}
		}
	}
	// A new report is gathered anew; until then the first is reused.
	next := &Report{ComputedAt: time.Unix(2000, 0)}
	next.Findings = r.Findings[:1]
	a.report.Store(next)
	if n, err := testutil.GatherAndCount(a.reports, "nodeagent_analyze_finding"); err != nil || n != 1 {
		t.Errorf("after a new report with one finding: %d finding series (%v), want 1", n, err)
	}
}

// move-to-driver's namespaces and workloads each have their GETs saved
// and their watches on both sides, labelled by namespace and workload.
func TestMoveToDriverSeries(t *testing.T) {
	a := New(nil, Options{MaxFindingSeries: 10})
	saved := analyze.Kinds{ConfigMaps: analyze.Rates{APIServerGets: 0.5, Watches: 2}}
	added := analyze.Kinds{ConfigMaps: analyze.Rates{Watches: 3}}
	a.report.Store(&Report{ComputedAt: time.Unix(1000, 0), Result: analyze.Result{WhatIfs: []analyze.WhatIf{{Name: "move-to-driver",
		Namespaces: []analyze.MoveGroup{{Namespace: "shop", KubeletsSaved: saved, DriverAdded: added}},
		Workloads:  []analyze.MoveGroup{{Namespace: "shop", Workload: "Deployment/web", KubeletsSaved: saved, DriverAdded: added}}}}}})
	want := `
# HELP nodeagent_analyze_move_to_driver_watches The watches that moving a namespace's or a workload's configMap volumes to the driver would close at the kubelets (side=kubelet) and open at the driver (side=driver).
# TYPE nodeagent_analyze_move_to_driver_watches gauge
nodeagent_analyze_move_to_driver_watches{namespace="shop",side="driver",workload=""} 3
nodeagent_analyze_move_to_driver_watches{namespace="shop",side="driver",workload="Deployment/web"} 3
nodeagent_analyze_move_to_driver_watches{namespace="shop",side="kubelet",workload=""} 2
nodeagent_analyze_move_to_driver_watches{namespace="shop",side="kubelet",workload="Deployment/web"} 2
`
	if err := testutil.GatherAndCompare(a.reports, strings.NewReader(want), "nodeagent_analyze_move_to_driver_watches"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(a.reports, "nodeagent_analyze_move_to_driver_gets_saved_per_second"); err != nil || n != 2 {
		t.Errorf("%d series of GETs saved (%v), want a namespace's and a workload's", n, err)
	}
}
