package compare

import (
	"fmt"

	"github.com/nodeagent-io/nodeagent/pkg/report"
)

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
