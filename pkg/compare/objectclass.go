package compare

import (
	"fmt"

	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// classTable is the phases' GETs by object class, where the audit log
// gave them: the window's count, and the mean interval between a node's
// reads of one object, the finer figure (attribution's intervals.go).
func (r *Report) classTable() (report.Table, bool) {
	t := report.Table{Header: []string{"mode", "object class", "GET/s (audit)", "quorum GET/s", "model GET/s", "measured/model",
		"s between reads", "model s", "by interval"}}
	for _, p := range r.Phases {
		if p.Audit == nil {
			continue
		}
		for _, c := range p.Audit.Classes {
			t.Rows = append(t.Rows, []string{string(p.Mode), string(c.Class), fmt.Sprintf("%.3f", c.GetQPS), fmt.Sprintf("%.3f", c.QuorumGetQPS),
				fmt.Sprintf("%.3f", c.ExpectedQPS), report.FormatRatio(report.Ratio(c.GetQPS, c.ExpectedQPS)),
				seconds(c.IntervalSeconds), seconds(c.ExpectedIntervalSeconds), report.FormatRatio(report.Ratio(c.ExpectedIntervalSeconds, c.IntervalSeconds))})
		}
	}
	return t, len(t.Rows) > 0
}

// seconds is an interval for the table, "-" where there is none.
func seconds(s float64) string {
	if s == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", s)
}
