package compare

import (
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/compare/attribution"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// AuditResult is a phase's ConfigMap requests from the run's nodes, as the
// apiserver's audit log records them (package attribution): the yardstick
// that holds for every fleet, including the reference kubelets, which have
// no metrics of their own here.
type AuditResult = attribution.Result

// attribute reads the audit log for the phase: the measured window, also
// by object class beside the model's prediction, and for watches the whole
// phase from start.
func (r *runner) attribute(res *PhaseResult, nodes []model.Node, start time.Time, prediction model.Prediction) error {
	var err error
	res.Audit, err = attribution.Attribute(r.auditLog, nodes, attribution.Window{PhaseStart: start, From: res.WindowStart, To: res.WindowEnd},
		attribution.ByClass(prediction))
	return err
}
