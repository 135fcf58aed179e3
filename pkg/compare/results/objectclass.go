package results

import (
	"fmt"

	"github.com/nodeagent-io/nodeagent/pkg/compare/attribution"

	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// classTable is the phases' GETs by object class, where the audit log
// gave them: the window's count, and, in reports that measured it, the
// mean interval between a node's reads of one object, the finer figure
// (attribution's intervals.go).
func (r *Report) classTable() (report.Table, bool) {
	intervals := false
	for _, p := range r.Phases {
		for _, c := range classesOf(p) {
			intervals = intervals || c.IntervalSeconds > 0
		}
	}
	t := report.Table{Header: []string{"mode", "object class", "GET/s (audit)", "quorum GET/s", "model GET/s", "measured/model"}}
	if intervals {
		t.Header = append(t.Header, "s between reads", "model s", "by interval")
	}
	for _, p := range r.Phases {
		for _, c := range classesOf(p) {
			row := []string{string(p.Mode), string(c.Class), fmt.Sprintf("%.3f", c.GetQPS), fmt.Sprintf("%.3f", c.QuorumGetQPS),
				fmt.Sprintf("%.3f", c.ExpectedQPS), report.FormatRatio(report.Ratio(c.GetQPS, c.ExpectedQPS))}
			if intervals {
				row = append(row, seconds(c.IntervalSeconds), seconds(c.ExpectedIntervalSeconds),
					report.FormatRatio(report.Ratio(c.ExpectedIntervalSeconds, c.IntervalSeconds)))
			}
			t.Rows = append(t.Rows, row)
		}
	}
	return t, len(t.Rows) > 0
}

// classesOf is a phase's GETs by class, none without an audit log.
func classesOf(p PhaseResult) []attribution.ClassResult {
	if p.Audit == nil {
		return nil
	}
	return p.Audit.Classes
}

// seconds is an interval for the table, "-" where there is none.
func seconds(s float64) string {
	if s == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", s)
}
