package live

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// The per-node, per-what-if and per-finding series. Per node: one series
// each for the node's predicted GETs, watches and update delay (bounded
// by the nodes). Per finding: one series for each finding's pod, container
// and object, so that an alert can name them, at most MaxFindingSeries (the
// report's first, the most pressing types first); the counts of
// nodeagent_analyze_findings stay exact whatever the cap.
var (
	descNodeGets = prometheus.NewDesc("nodeagent_analyze_node_predicted_apiserver_gets_per_second",
		"A node's kubelet's predicted ConfigMap and Secret GETs a second at the apiserver.", []string{"node"}, nil)
	descNodeWatches = prometheus.NewDesc("nodeagent_analyze_node_predicted_watches",
		"A node's kubelet's predicted open ConfigMap and Secret watches.", []string{"node"}, nil)
	descNodeDelay = prometheus.NewDesc("nodeagent_analyze_node_update_delay_seconds",
		"How long an update takes to reach a volume on the node: the median and the longest.", []string{"node", "stat"}, nil)
	descWhatIfGets = prometheus.NewDesc("nodeagent_analyze_whatif_apiserver_gets_per_second",
		"The kubelets' predicted GETs a second at the apiserver after a what-if (upgrade-to-v1.29, watch-everywhere, ...).", []string{"whatif"}, nil)
	descWhatIfWatches = prometheus.NewDesc("nodeagent_analyze_whatif_watches",
		"The kubelets' predicted open watches after a what-if.", []string{"whatif"}, nil)
	descMoveGets = prometheus.NewDesc("nodeagent_analyze_move_to_driver_gets_saved_per_second",
		"The kubelets' GETs a second at the apiserver that moving a namespace's or a workload's configMap volumes to nodeagent's CSI driver would save, each group moving alone: the top --top namespaces (workload empty) and workloads.",
		[]string{"namespace", "workload"}, nil)
	descMoveWatches = prometheus.NewDesc("nodeagent_analyze_move_to_driver_watches",
		"The watches that moving a namespace's or a workload's configMap volumes to the driver would close at the kubelets (side=kubelet) and open at the driver (side=driver).",
		[]string{"namespace", "workload", "side"}, nil)
	descFinding = prometheus.NewDesc("nodeagent_analyze_finding",
		"One finding: a pod (and container) that holds, or will hold, other content than the API's object; 1 while the finding stands.",
		[]string{"type", "namespace", "pod", "container", "node", "kind", "object"}, nil)
	descFindingsDropped = prometheus.NewDesc("nodeagent_analyze_finding_series_dropped",
		"Findings left out of nodeagent_analyze_finding by --max-finding-series.", nil, nil)
)

// appendSeries appends the per-node, per-what-if and per-finding series of
// r to out.
func appendSeries(out []prometheus.Metric, r *Report, maxFindings int) []prometheus.Metric {
	for _, n := range r.Nodes {
		sum := n.Predicted.Sum()
		out = append(out, prometheus.MustNewConstMetric(descNodeGets, prometheus.GaugeValue, sum.APIServerGets, n.Name))
		out = append(out, prometheus.MustNewConstMetric(descNodeWatches, prometheus.GaugeValue, float64(sum.Watches), n.Name))
		if d := n.UpdateDelay; d != nil {
			out = append(out, prometheus.MustNewConstMetric(descNodeDelay, prometheus.GaugeValue, d.Median, n.Name, "median"))
			out = append(out, prometheus.MustNewConstMetric(descNodeDelay, prometheus.GaugeValue, d.Max, n.Name, "max"))
		}
	}
	for _, w := range r.WhatIfs {
		sum := w.Predicted.Sum()
		out = append(out, prometheus.MustNewConstMetric(descWhatIfGets, prometheus.GaugeValue, sum.APIServerGets, w.Name))
		out = append(out, prometheus.MustNewConstMetric(descWhatIfWatches, prometheus.GaugeValue, float64(sum.Watches), w.Name))
		for _, g := range append(w.Namespaces, w.Workloads...) {
			saved, added := g.KubeletsSaved.Sum(), g.DriverAdded.Sum()
			out = append(out, prometheus.MustNewConstMetric(descMoveGets, prometheus.GaugeValue, saved.APIServerGets, g.Namespace, g.Workload),
				prometheus.MustNewConstMetric(descMoveWatches, prometheus.GaugeValue, float64(saved.Watches), g.Namespace, g.Workload, "kubelet"),
				prometheus.MustNewConstMetric(descMoveWatches, prometheus.GaugeValue, float64(added.Watches), g.Namespace, g.Workload, "driver"))
		}
	}
	// Once the cap is reached the rest are counted, not looked at: a
	// large cluster has a finding per pod, and every report is gathered.
	seen := map[[7]string]bool{}
	dropped := 0
	for i, f := range r.Findings {
		if len(seen) >= maxFindings {
			dropped = len(r.Findings) - i
			break
		}
		ns, pod, _ := strings.Cut(f.Pod, "/")
		labels := [7]string{string(f.Type), ns, pod, f.Container, f.Node, string(f.Object.Kind), f.Object.Name}
		if seen[labels] {
			continue
		}
		seen[labels] = true
		out = append(out, prometheus.MustNewConstMetric(descFinding, prometheus.GaugeValue, 1, labels[:]...))
	}
	out = append(out, prometheus.MustNewConstMetric(descFindingsDropped, prometheus.GaugeValue, float64(dropped)))
	return out
}
