package compare

import (
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/compare/attribution"
	"github.com/nodeagent-io/nodeagent/pkg/compare/results"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// attribute reads the audit log for the phase: the measured window, also
// by object class beside the model's prediction, and for watches the whole
// phase from start.
func (r *runner) attribute(res *results.PhaseResult, nodes []model.Node, start time.Time, prediction model.Prediction) error {
	var err error
	res.Audit, err = attribution.Attribute(r.auditLog, nodes, attribution.Window{PhaseStart: start, From: res.WindowStart, To: res.WindowEnd},
		attribution.ByClass(prediction))
	if err == nil && res.Churn != nil && res.MeasuredSeconds > 0 {
		// The steady pods' watches are open before the window: those
		// opened in it are the arrivals'.
		opens := float64(res.Audit.WatchesInWindow) / res.MeasuredSeconds
		res.Churn.WatchOpenQPS = &opens
	}
	return err
}
