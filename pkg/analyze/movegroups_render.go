package analyze

import (
	"fmt"

	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// moveSections are move-to-driver's top namespaces and workloads, each
// as if it moved alone; none where nothing can move.
func (r Result) moveSections() []section {
	var out []section
	for _, w := range r.WhatIfs {
		if w.MovableNamespaces == 0 {
			continue
		}
		out = append(out,
			section{fmt.Sprintf("Move to the driver, by namespace (top %d of %d, each moving alone)", len(w.Namespaces), w.MovableNamespaces),
				moveTable(w.Namespaces, false)},
			section{fmt.Sprintf("Move to the driver, by workload (top %d of %d, each moving alone)", len(w.Workloads), w.MovableWorkloads),
				moveTable(w.Workloads, true)})
	}
	return out
}

func moveTable(groups []MoveGroup, workloads bool) report.Table {
	t := report.Table{Header: []string{"namespace", "pods", "volumes", "kubelet GET/s saved", "etcd reads/s saved",
		"kubelet watches saved", "driver watches added", "update delay now (median / longest)", "with the driver", "findings cleared"}}
	if workloads {
		t.Header = append([]string{"namespace", "workload"}, t.Header[1:]...)
	}
	for _, g := range groups {
		saved, added := g.KubeletsSaved.Sum(), g.DriverAdded.Sum()
		row := []string{g.Namespace}
		if workloads {
			row = append(row, g.Workload)
		}
		t.Rows = append(t.Rows, append(row, fmt.Sprint(g.Pods), fmt.Sprint(g.Volumes),
			fmt.Sprintf("%.3f", saved.APIServerGets), fmt.Sprintf("%.3f", saved.EtcdReads), fmt.Sprint(saved.Watches),
			fmt.Sprint(added.Watches), delayCell(g.UpdateDelay), delayCell(g.MovedUpdateDelay), fmt.Sprint(g.ClearsFindings)))
	}
	return t
}
