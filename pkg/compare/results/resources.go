package results

import (
	"fmt"

	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// ResourceTable is what one node's agent cost in each phase: its CPU over
// the measured window in millicores, its resident memory at the window's
// end and at its peak, and the ConfigMap GETs it cost the apiserver. It is
// a node's own cost only when every agent runs as its own process
// (--agent-processes, the kubelet modes); in-process agents share one
// process, whose cost it divides by the nodes. docs/performance.md quotes
// recorded runs through it.
func (r *Report) ResourceTable() report.Table {
	out := report.Table{Header: []string{"mode", "CPU", "RSS at the end / peak", "ConfigMap GET/s"}}
	nodes := r.Scenario.Nodes
	for i := range r.Phases {
		p := &r.Phases[i]
		rss := "-"
		if p.AgentRSSBytes > 0 || p.AgentPeakRSSBytes > 0 {
			rss = fmt.Sprintf("%.1f / %.1f MiB", float64(p.AgentRSSBytes)/float64(nodes)/(1<<20), p.memoryPerNode(nodes)/(1<<20))
		}
		out.Rows = append(out.Rows, []string{
			"`" + string(p.Mode) + "`",
			report.FormatMeasured(p.cpuPerNode(nodes)*1000, "%.1f millicores"),
			rss,
			fmt.Sprintf("%.2f", p.APIServerGetQPS),
		})
	}
	return out
}

// SummaryTable is the first columns of the results table, narrow enough
// for a page's first screen: each mode's ConfigMap GETs at the apiserver
// and at etcd, the model's, and the first over the model. README.md
// quotes the demo's run through it.
func (r *Report) SummaryTable() report.Table {
	full := r.table()
	out := report.Table{Header: full.Header[:5]}
	for _, row := range full.Rows {
		out.Rows = append(out.Rows, row[:5])
	}
	return out
}
