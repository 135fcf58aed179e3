package results

import (
	"fmt"

	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// writeChart draws GET/s over each phase's measured window, one colour per
// mode: the apiserver as a solid line, etcd as a dashed one, and the
// model's apiserver rate as a thin line of short dashes.
func writeChart(r *Report, dir string) error {
	c := report.Chart{
		Title: fmt.Sprintf("ConfigMap GETs: %d nodes × %d pods, S=%gs, TTL=%gs",
			r.Scenario.Nodes, r.Scenario.PodsPerNode, r.Scenario.SyncFrequencySeconds, r.Scenario.TTLSeconds),
		XLabel: "seconds into the measured window",
		YLabel: "requests per second",
	}
	for _, phase := range r.Phases {
		if len(phase.Samples) == 0 {
			continue
		}
		var apiserver, etcd []report.Point
		for _, s := range phase.Samples {
			apiserver = append(apiserver, report.Point{X: s.Seconds, Y: s.APIServerQPS})
			etcd = append(etcd, report.Point{X: s.Seconds, Y: s.EtcdQPS})
		}
		first, last := phase.Samples[0].Seconds, phase.Samples[len(phase.Samples)-1].Seconds
		colour, mode := phase.Mode.Colour(), string(phase.Mode)
		c.Series = append(c.Series,
			report.Series{Label: mode + ": apiserver GET/s", Colour: colour, Points: apiserver},
			report.Series{Label: mode + ": etcd get/s", Colour: colour, Style: report.Dashed, Points: etcd},
			report.Series{Label: mode + ": model", Colour: colour, Style: report.Model,
				Points: []report.Point{{X: first, Y: phase.ExpectedAPIServerQPS}, {X: last, Y: phase.ExpectedAPIServerQPS}}})
	}
	return c.Save(dir, "chart")
}
