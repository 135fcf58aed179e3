// Package attribution reads a comparison phase's requests from the
// apiserver's audit log, attributed to the run's nodes by their client
// identities: GETs (quorum and cached), lists, watches and errors in the
// measured window, and GETs by class of object beside the model's.
package attribution

import (
	"strings"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/auditlog"
	"github.com/nodeagent-io/nodeagent/pkg/compare/objects"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/nodeidentity"
)

// Result is a phase's ConfigMap requests from the run's nodes, as the
// apiserver's audit log records them: the yardstick that holds for every
// fleet, including the reference kubelets, which have no metrics of their
// own here. Rates are over the measured window, for all nodes together.
type Result struct {
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

// Window is the measured window of a phase and the phase's start (the
// agents' start: watches count from there).
type Window struct {
	PhaseStart, From, To time.Time
}

// Attribute reads auditLog for the requests of nodes' identities: in the
// window, also by object class beside expected (the model's GET/s per
// class), and for watches over the whole phase.
func Attribute(auditLog string, nodes []model.Node, w Window, expected map[ObjectClass]float64) (*Result, error) {
	byUser, err := auditlog.CountWindows(auditLog,
		auditlog.Window{From: w.From, To: w.To}, auditlog.Window{From: w.PhaseStart, To: w.To})
	if err != nil {
		return nil, err
	}
	window, phase := nodeCounts(byUser[0], nodes), nodeCounts(byUser[1], nodes)
	r := &Result{
		Lists: window.QuorumLists + window.CacheLists, WatchesInWindow: window.Watches,
		WatchesOpened: phase.Watches, Errors: window.Errors,
	}
	if seconds := w.To.Sub(w.From).Seconds(); seconds > 0 {
		r.QuorumGetQPS = float64(window.QuorumGets) / seconds
		r.CacheGetQPS = float64(window.CacheGets) / seconds
	}
	r.Classes, err = classRates(auditLog, nodes, w, expected)
	return r, err
}

// nodeCounts sums the counts of the nodes' identities.
func nodeCounts(byUser map[string]auditlog.Counts, nodes []model.Node) auditlog.Counts {
	var total auditlog.Counts
	for _, n := range nodes {
		total.Add(byUser[nodeidentity.User(n.Name)])
	}
	return total
}

// ObjectClass groups the ConfigMaps a run reads by how they are shared,
// which decides how the model counts them: every pod of a node reads its
// namespace's kube-root-ca.crt, one cache entry shared by the node's
// pods; the run's own ConfigMaps are read by one pod each (or by the
// pods that draw from --shared-configmaps' pool).
type ObjectClass string

const (
	ClassRootCA     ObjectClass = "kube-root-ca.crt"
	ClassConfigMaps ObjectClass = "run's ConfigMaps"
	// ClassArriving are the ConfigMaps that only arriving pods read
	// (--pod-churn).
	ClassArriving ObjectClass = "arriving pods' ConfigMaps"
)

func classOf(name string) ObjectClass {
	switch {
	case name == objects.RootCAConfigMap:
		return ClassRootCA
	case strings.HasPrefix(name, objects.ArrivingConfigMapPrefix):
		return ClassArriving
	}
	return ClassConfigMaps
}

// ClassResult is one class's GETs in a phase's window: measured from the
// audit log, and the model's.
type ClassResult struct {
	Class        ObjectClass `json:"class"`
	GetQPS       float64     `json:"get_qps"`
	QuorumGetQPS float64     `json:"quorum_get_qps"`
	ExpectedQPS  float64     `json:"expected_get_qps"`
	// IntervalSeconds is the mean time between one node's consecutive
	// GETs of one object in the window; ExpectedIntervalSeconds is the
	// model's, its object-node pairs over its GET/s. See intervals.go for
	// why this, not the count, is the class's precise figure.
	IntervalSeconds         float64 `json:"interval_seconds,omitempty"`
	ExpectedIntervalSeconds float64 `json:"expected_interval_seconds,omitempty"`
}

// ByClass is a prediction's ConfigMap GET/s for each class of object.
func ByClass(p model.Prediction) map[ObjectClass]float64 {
	byClass := map[ObjectClass]float64{}
	for _, o := range p.Objects {
		if o.Object.Kind == model.ConfigMap {
			byClass[classOf(o.Object.Name)] += o.APIServerGetQPS
		}
	}
	return byClass
}

// classRates counts the nodes' ConfigMap GETs in the audit log in the
// window by class, beside the model's rates, and measures each class's
// interval between reads; classes neither measured nor expected are left
// out.
func classRates(auditLog string, nodes []model.Node, w Window, expected map[ObjectClass]float64) ([]ClassResult, error) {
	seconds := w.To.Sub(w.From).Seconds()
	if seconds <= 0 {
		return nil, nil
	}
	gets, err := auditlog.Gets(auditLog, w.PhaseStart, w.To)
	if err != nil {
		return nil, err
	}
	users := map[string]bool{}
	for _, n := range nodes {
		users[nodeidentity.User(n.Name)] = true
	}
	var ours []auditlog.Get
	for _, g := range gets {
		if users[g.User] {
			ours = append(ours, g)
		}
	}
	intervals := measureIntervals(ours, w.From, w.To)
	var out []ClassResult
	for _, c := range []ObjectClass{ClassConfigMaps, ClassRootCA, ClassArriving} {
		r := ClassResult{Class: c, ExpectedQPS: expected[c]}
		for _, g := range ours {
			if classOf(g.Name) != c || g.Received.Before(w.From) {
				continue
			}
			r.GetQPS += 1 / seconds
			if g.Quorum {
				r.QuorumGetQPS += 1 / seconds
			}
		}
		r.IntervalSeconds = intervals[c].mean()
		if r.ExpectedQPS > 0 {
			r.ExpectedIntervalSeconds = float64(intervals[c].pairs) / r.ExpectedQPS
		}
		if r.GetQPS > 0 || r.ExpectedQPS > 0 {
			out = append(out, r)
		}
	}
	return out, nil
}
