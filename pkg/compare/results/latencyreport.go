package results

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// hasLatency says whether any phase measured update latency.
func (r *Report) hasLatency() bool {
	for _, p := range r.Phases {
		if p.Latency != nil {
			return true
		}
	}
	return false
}

// LatencyTable is the latency of each phase that measured it, for the
// text and Markdown forms (and docs/latency.md's quotes of recorded runs).
func (r *Report) LatencyTable() report.Table {
	out := report.Table{Header: []string{"mode", "updates", "samples", "p50", "p99", "max", "kubelet p50", "kubelet p99", "kubelet bound", "not on disk", "update ack p99"}}
	for _, p := range r.Phases {
		l := p.Latency
		if l == nil {
			continue
		}
		out.Rows = append(out.Rows, []string{
			string(p.Mode), fmt.Sprint(l.Updates), fmt.Sprint(l.Samples),
			report.FormatSeconds(l.P50Seconds), report.FormatSeconds(l.P99Seconds), report.FormatSeconds(l.MaxSeconds),
			report.FormatSeconds(l.ModelP50Seconds), report.FormatSeconds(l.ModelP99Seconds), report.FormatSeconds(l.BoundSeconds),
			fmt.Sprint(l.Unseen), report.FormatSeconds(l.APIWriteP99Seconds),
		})
	}
	return out
}

// writeLatencyTable prints the latency table as aligned text.
func (r *Report) writeLatencyTable(w io.Writer) {
	fmt.Fprintf(w, "\nUpdate latency, from the apiserver's acknowledgement of an update to the new bytes on disk, per (update, volume):\n\n")
	_ = r.LatencyTable().WriteText(w)
}

// latencyMarkdown is report.md's latency section.
func (r *Report) latencyMarkdown() string {
	var b strings.Builder
	s := r.Scenario
	fmt.Fprintf(&b, "\n## Update latency\n\n%g ConfigMap updates a second on average, at random times, round robin over the run's ConfigMaps, during each "+
		"measured window; each sample is one (update, volume) pair: from the apiserver's acknowledgement of the update (it is committed, "+
		"and any reader sees it) to the moment the volume's `..data` link points at content holding it (inotify), a later update "+
		"superseding an earlier one included; *update ack p99* is how long the apiserver took to acknowledge, which is not in "+
		"the samples. The kubelet columns are "+
		"the model of docs/model.md for the kubelet's behaviour with the same strategy, at S = %gs and the TTL in effect; beside "+
		"`watch`, which remounts on the change, they are the kubelet's Watch strategy, which waits for each pod's next sync.\n\n",
		s.UpdateRate, s.SyncFrequencySeconds)
	b.WriteString(r.LatencyTable().Markdown())
	fmt.Fprintf(&b, "\n![update latency](latency.svg)\n")
	return b.String()
}

// writeLatencyChart draws each phase's latencies as a cumulative
// distribution on a logarithmic time axis.
func writeLatencyChart(r *Report, dir string) error {
	c := report.Chart{
		Title: fmt.Sprintf("ConfigMap update to disk: %d pods per node, S=%gs, %g updates/s",
			r.Scenario.PodsPerNode, r.Scenario.SyncFrequencySeconds, r.Scenario.UpdateRate),
		XLabel: "seconds from the update to the new bytes on disk (log scale)",
		YLabel: "fraction of (update, volume) pairs",
		LogX:   true, YMax: 1,
		// Top left, clear of the fastest curve, which rises first.
		LegendLeftOffset: 2,
	}
	for _, phase := range r.Phases {
		l := phase.Latency
		if l == nil || len(l.SampleSeconds) == 0 {
			continue
		}
		// At most a thousand points per curve.
		seconds := l.SampleSeconds
		step := max(1, len(seconds)/1000)
		var points []report.Point
		for i := 0; i < len(seconds); i += step {
			points = append(points, report.Point{X: math.Max(seconds[i], 1e-3), Y: float64(i+1) / float64(len(seconds))})
		}
		points = append(points, report.Point{X: math.Max(seconds[len(seconds)-1], 1e-3), Y: 1})
		c.Series = append(c.Series, report.Series{
			Label:  fmt.Sprintf("%s: p99 %s", phase.Mode, report.FormatSeconds(l.P99Seconds)),
			Colour: phase.Mode.Colour(), Style: report.Curve, Points: points,
		})
	}
	return c.Save(dir, "latency")
}
