package analyze

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// ChurnResult is what the pods that came and went in the window
// (Options.ArrivalWindow) cost, beside the steady load (Total has both).
type ChurnResult struct {
	WindowSeconds float64 `json:"windowSeconds"`
	// ArrivalsPerSecond are pods arriving on the nodes, all workloads'.
	ArrivalsPerSecond float64 `json:"arrivalsPerSecond"`
	// Predicted is the churn's part of the kubelets' load.
	Predicted ChurnRates `json:"predicted"`
	// Workloads are the top ones by what their churn costs, then by name.
	Workloads []WorkloadChurn `json:"workloads"`
}

// WorkloadChurn is one workload's pods coming and going: how often, for
// how long, and what that costs the apiserver under each node's kubelet
// settings and with nodeagent's CSI driver serving its volumes (a watch
// opened by each pod that finds none of its objects' watches open).
type WorkloadChurn struct {
	Namespace         string  `json:"namespace"`
	Workload          string  `json:"workload"`
	ArrivalsPerSecond float64 `json:"arrivalsPerSecond"`
	Nodes             int     `json:"nodes"`
	LifetimeSeconds   float64 `json:"lifetimeSeconds"`
	// Resyncs is how many times the kubelet syncs one of its pods again
	// while it runs, on average (model.PLEGResyncs): each remounts.
	Resyncs    float64    `json:"resyncs"`
	Predicted  ChurnRates `json:"predicted"`
	WithDriver ChurnRates `json:"withDriver"`
}

// churn sums the churn's part of the nodes' load and costs each arriving
// workload on its own, with the steady readers of each object on each
// node; nil where no pod arrived.
func (a *Analysis) churn(c Cluster, top int) *ChurnResult {
	if len(c.arriving) == 0 {
		return nil
	}
	total := a.total()
	r := &ChurnResult{WindowSeconds: c.window.Seconds(), Predicted: churnRatesOf(total.configMaps.Churn).plus(churnRatesOf(total.secrets.Churn))}
	for _, w := range c.arriving {
		r.ArrivalsPerSecond += w.rate
		wc := WorkloadChurn{Namespace: w.namespace, Workload: w.workload, ArrivalsPerSecond: w.rate, Nodes: len(w.byNode),
			LifetimeSeconds: w.lifetime.Seconds(), Resyncs: w.resyncs}
		for node, rate := range w.byNode {
			p := a.parts[node]
			if p == nil {
				continue
			}
			driver := p.node
			driver.Behaviour, driver.ReadsAsPods = model.Driver, c.DriverReadsAsPods
			for _, o := range w.reads {
				rs := model.Readers{Arrivals: rate, Occupancy: rate * w.lifetime.Seconds(), Resyncs: rate * w.resyncs}
				if i, found := slices.BinarySearchFunc(p.objects, o, func(r objectRead, o model.Object) int { return compareObjects(r.object, o) }); found {
					rs.Remounts, rs.Retries = int(p.objects[i].remounts), int(p.objects[i].retries)
				}
				wc.Predicted = wc.Predicted.plus(churnRatesOf(model.LoadOf(p.node, o, rs).Churn))
				wc.WithDriver = wc.WithDriver.plus(churnRatesOf(model.LoadOf(driver, o, model.Readers{Arrivals: rs.Arrivals, Occupancy: rs.Occupancy}).Churn))
			}
		}
		r.Workloads = append(r.Workloads, wc)
	}
	slices.SortFunc(r.Workloads, func(x, y WorkloadChurn) int {
		return cmp.Or(cmp.Compare(y.Predicted.APIServerGets+y.Predicted.WatchOpens, x.Predicted.APIServerGets+x.Predicted.WatchOpens),
			cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Workload, y.Workload))
	})
	if len(r.Workloads) > top {
		r.Workloads = r.Workloads[:top]
	}
	return r
}

// table is the churn's section: the sum, then each top workload.
func (c *ChurnResult) table() report.Table {
	t := report.Table{Header: []string{"namespace", "workload", "arrivals/min", "nodes", "each stays", "resyncs each",
		"apiserver GET/s", "quorum GET/s", "watch opens/s", "with the driver: watch opens/s"}}
	t.Rows = append(t.Rows, []string{"all", "", fmt.Sprintf("%.2f", 60*c.ArrivalsPerSecond), "", "", "",
		fmt.Sprintf("%.3f", c.Predicted.APIServerGets), fmt.Sprintf("%.3f", c.Predicted.QuorumGets), fmt.Sprintf("%.3f", c.Predicted.WatchOpens), ""})
	for _, w := range c.Workloads {
		t.Rows = append(t.Rows, []string{w.Namespace, w.Workload, fmt.Sprintf("%.2f", 60*w.ArrivalsPerSecond), fmt.Sprint(w.Nodes),
			formatWindow(w.LifetimeSeconds), fmt.Sprintf("%.2f", w.Resyncs), fmt.Sprintf("%.3f", w.Predicted.APIServerGets), fmt.Sprintf("%.3f", w.Predicted.QuorumGets),
			fmt.Sprintf("%.3f", w.Predicted.WatchOpens), fmt.Sprintf("%.3f", w.WithDriver.WatchOpens)})
	}
	return t
}

// formatWindow is a span of seconds as a person reads it.
func formatWindow(seconds float64) string {
	return (time.Duration(seconds) * time.Second).Round(time.Second).String()
}
