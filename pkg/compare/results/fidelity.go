package results

import (
	"fmt"
	"strings"

	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// cpuPerNode is the cores one node's agent used over the window.
func (p *PhaseResult) cpuPerNode(nodes int) float64 {
	if p.MeasuredSeconds <= 0 || nodes == 0 {
		return 0
	}
	return p.AgentCPUSeconds / p.MeasuredSeconds / float64(nodes)
}

// memoryPerNode is the peak resident memory per node, in bytes.
func (p *PhaseResult) memoryPerNode(nodes int) float64 {
	if nodes == 0 {
		return 0
	}
	return float64(p.AgentPeakRSSBytes) / float64(nodes)
}

// fidelity sets each nodeagent mode beside the reference kubelet of the
// same behaviour, where the run measured both: one line per pair.
func (r *Report) fidelity() []string {
	phases := map[modes.Mode]*PhaseResult{}
	for i := range r.Phases {
		phases[r.Phases[i].Mode] = &r.Phases[i]
	}
	var lines []string
	for _, ref := range modes.Known {
		kubelet := phases[ref]
		var agent *PhaseResult
		for _, m := range ref.PairsWith() {
			if agent == nil {
				agent = phases[m]
			}
		}
		if kubelet == nil || agent == nil {
			continue
		}
		n := r.Scenario.Nodes
		parts := []string{
			pair("apiserver GET/s", agent.APIServerGetQPS, kubelet.APIServerGetQPS, "%.2f"),
			pair("etcd get/s", agent.EtcdGetQPS, kubelet.EtcdGetQPS, "%.2f"),
		}
		if agent.Audit != nil && kubelet.Audit != nil {
			parts = append(parts,
				pair("quorum GET/s (audit)", agent.Audit.QuorumGetQPS, kubelet.Audit.QuorumGetQPS, "%.2f"),
				pair("cached GET/s (audit)", agent.Audit.CacheGetQPS, kubelet.Audit.CacheGetQPS, "%.2f"),
				pair("watches opened", float64(agent.Audit.WatchesOpened), float64(kubelet.Audit.WatchesOpened), "%.0f"))
		}
		parts = append(parts,
			fmt.Sprintf("mcores/node %s / %s", report.FormatMeasured(agent.cpuPerNode(n)*1000, "%.1f"), report.FormatMeasured(kubelet.cpuPerNode(n)*1000, "%.1f")),
			fmt.Sprintf("MiB/node %s / %s", report.FormatMeasured(agent.memoryPerNode(n)/(1<<20), "%.1f"), report.FormatMeasured(kubelet.memoryPerNode(n)/(1<<20), "%.1f")))
		lines = append(lines, fmt.Sprintf("%s vs %s: %s", agent.Mode, kubelet.Mode, strings.Join(parts, "; ")))
	}
	return lines
}

// pair formats "name a / b (a/b)".
func pair(name string, a, b float64, format string) string {
	return fmt.Sprintf("%s "+format+" / "+format+" (%s)", name, a, b, report.FormatRatio(report.Ratio(a, b)))
}
