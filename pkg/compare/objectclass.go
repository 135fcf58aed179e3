package compare

import (
	"fmt"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/auditlog"
	"github.com/nodeagent-io/nodeagent/pkg/compare/objects"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/nodeidentity"
	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// ObjectClass groups the ConfigMaps a run reads by how they are shared,
// which decides how the model counts them: every pod of a node reads its
// namespace's kube-root-ca.crt, one cache entry shared by the node's
// pods; the run's own ConfigMaps are read by one pod each (or by the
// pods that draw from --shared-configmaps' pool).
type ObjectClass string

const (
	ClassRootCA     ObjectClass = "kube-root-ca.crt"
	ClassConfigMaps ObjectClass = "run's ConfigMaps"
)

func classOf(name string) ObjectClass {
	if name == objects.RootCAConfigMap {
		return ClassRootCA
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
}

// byClass is a prediction's ConfigMap GET/s for each class of object.
func byClass(p model.Prediction) map[ObjectClass]float64 {
	byClass := map[ObjectClass]float64{}
	for _, o := range p.Objects {
		if o.Object.Kind == model.ConfigMap {
			byClass[classOf(o.Object.Name)] += o.APIServerGetQPS
		}
	}
	return byClass
}

// classRates counts the nodes' ConfigMap GETs in the audit log between
// from and to by class, beside the model's rates; classes neither
// measured nor expected are left out.
func classRates(auditLog string, nodes []model.Node, from, to time.Time, expected map[ObjectClass]float64) ([]ClassResult, error) {
	gets, err := auditlog.Gets(auditLog, from, to)
	if err != nil {
		return nil, err
	}
	users := map[string]bool{}
	for _, n := range nodes {
		users[nodeidentity.User(n.Name)] = true
	}
	seconds := to.Sub(from).Seconds()
	if seconds <= 0 {
		return nil, nil
	}
	rates := map[ObjectClass]*ClassResult{}
	for _, c := range []ObjectClass{ClassConfigMaps, ClassRootCA} {
		rates[c] = &ClassResult{Class: c, ExpectedQPS: expected[c]}
	}
	for _, g := range gets {
		if !users[g.User] {
			continue
		}
		r := rates[classOf(g.Name)]
		r.GetQPS += 1 / seconds
		if g.Quorum {
			r.QuorumGetQPS += 1 / seconds
		}
	}
	var out []ClassResult
	for _, c := range []ObjectClass{ClassConfigMaps, ClassRootCA} {
		if r := rates[c]; r.GetQPS > 0 || r.ExpectedQPS > 0 {
			out = append(out, *r)
		}
	}
	return out, nil
}

// classTable is the phases' GETs by object class, where the audit log
// gave them.
func (r *Report) classTable() (report.Table, bool) {
	t := report.Table{Header: []string{"mode", "object class", "GET/s (audit)", "quorum GET/s", "model GET/s", "measured/model"}}
	for _, p := range r.Phases {
		if p.Audit == nil {
			continue
		}
		for _, c := range p.Audit.Classes {
			t.Rows = append(t.Rows, []string{string(p.Mode), string(c.Class), fmt.Sprintf("%.3f", c.GetQPS), fmt.Sprintf("%.3f", c.QuorumGetQPS),
				fmt.Sprintf("%.3f", c.ExpectedQPS), report.FormatRatio(report.Ratio(c.GetQPS, c.ExpectedQPS))})
		}
	}
	return t, len(t.Rows) > 0
}
