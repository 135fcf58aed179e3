package compare

import (
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/auditlog"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/nodeidentity"
)

// AuditResult is a phase's ConfigMap requests from the run's nodes, as the
// apiserver's audit log records them: the yardstick that holds for every
// fleet, including the reference kubelets, which have no metrics of their
// own here. Rates are over the measured window, for all nodes together.
type AuditResult struct {
	// QuorumGetQPS are GETs without a resourceVersion: each is an etcd
	// read. CacheGetQPS are GETs the watch cache serves.
	QuorumGetQPS float64 `json:"quorum_get_qps"`
	CacheGetQPS  float64 `json:"cache_get_qps"`
	// Lists and WatchesInWindow count, in the window, lists and watches
	// opened; WatchesOpened counts watches opened over the whole phase,
	// warm-up included, when the watch strategy opens one per ConfigMap.
	Lists           int `json:"lists"`
	WatchesInWindow int `json:"watches_in_window"`
	WatchesOpened   int `json:"watches_opened"`
	// Errors are refused or failed requests in the window (404 included).
	Errors int `json:"errors"`
	// Classes splits the window's GETs by ObjectClass, beside the model's.
	Classes []ClassResult `json:"classes,omitempty"`
}

// attribute reads the audit log for the phase: the measured window, also
// by object class beside the model's expected rates, and for watches the
// whole phase from start.
func (r *runner) attribute(res *PhaseResult, nodes []model.Node, start time.Time, expected map[ObjectClass]float64) error {
	byUser, err := auditlog.CountWindows(r.auditLog,
		auditlog.Window{From: res.WindowStart, To: res.WindowEnd}, auditlog.Window{From: start, To: res.WindowEnd})
	if err != nil {
		return err
	}
	window, phase := nodeCounts(byUser[0], nodes), nodeCounts(byUser[1], nodes)
	a := &AuditResult{
		Lists: window.QuorumLists + window.CacheLists, WatchesInWindow: window.Watches,
		WatchesOpened: phase.Watches, Errors: window.Errors,
	}
	if res.MeasuredSeconds > 0 {
		a.QuorumGetQPS = float64(window.QuorumGets) / res.MeasuredSeconds
		a.CacheGetQPS = float64(window.CacheGets) / res.MeasuredSeconds
	}
	res.Audit = a
	a.Classes, err = classRates(r.auditLog, nodes, res.WindowStart, res.WindowEnd, expected)
	return err
}

// nodeCounts sums the counts of the nodes' identities.
func nodeCounts(byUser map[string]auditlog.Counts, nodes []model.Node) auditlog.Counts {
	var total auditlog.Counts
	for _, n := range nodes {
		total.Add(byUser[nodeidentity.User(n.Name)])
	}
	return total
}
