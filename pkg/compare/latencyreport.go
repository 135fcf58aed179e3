package compare

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
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

// latencyRows gives the latency table's cells, for the text and Markdown
// forms.
func (r *Report) latencyRows() [][]string {
	out := [][]string{{"mode", "updates", "samples", "p50", "p99", "max", "kubelet p50", "kubelet p99", "kubelet bound", "not on disk", "update ack p99"}}
	for _, p := range r.Phases {
		l := p.Latency
		if l == nil {
			continue
		}
		out = append(out, []string{
			string(p.Mode), fmt.Sprint(l.Updates), fmt.Sprint(l.Samples),
			formatSeconds(l.P50Seconds), formatSeconds(l.P99Seconds), formatSeconds(l.MaxSeconds),
			formatSeconds(l.ModelP50Seconds), formatSeconds(l.ModelP99Seconds), formatSeconds(l.BoundSeconds),
			fmt.Sprint(l.Unseen), formatSeconds(l.APIWriteP99Seconds),
		})
	}
	return out
}

// writeLatencyTable prints the latency table as aligned text.
func (r *Report) writeLatencyTable(w io.Writer) {
	fmt.Fprintf(w, "\nUpdate latency, from the apiserver's acknowledgement of an update to the new bytes on disk, per (update, volume):\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, row := range r.latencyRows() {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
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
	rows := r.latencyRows()
	fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(rows[0], " | "), strings.Repeat("---|", len(rows[0])))
	for _, row := range rows[1:] {
		fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
	}
	fmt.Fprintf(&b, "\n![update latency](latency.svg)\n")
	return b.String()
}

// writeLatencyChart draws each phase's latencies as a cumulative
// distribution on a logarithmic time axis.
func writeLatencyChart(r *Report, dir string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("ConfigMap update to disk: %d pods per node, S=%gs, %g updates/s",
		r.Scenario.PodsPerNode, r.Scenario.SyncFrequencySeconds, r.Scenario.UpdateRate)
	p.X.Label.Text = "seconds from the update to the new bytes on disk (log scale)"
	p.Y.Label.Text = "fraction of (update, volume) pairs"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	// Top left, clear of the fastest curve, which rises first.
	p.Legend.Top, p.Legend.Left, p.Legend.XOffs = true, true, 2*vg.Inch
	p.Add(plotter.NewGrid())
	for _, phase := range r.Phases {
		l := phase.Latency
		if l == nil || len(l.seconds) == 0 {
			continue
		}
		// At most a thousand points per curve.
		step := max(1, len(l.seconds)/1000)
		var xys plotter.XYs
		for i := 0; i < len(l.seconds); i += step {
			xys = append(xys, plotter.XY{X: math.Max(l.seconds[i], 1e-3), Y: float64(i+1) / float64(len(l.seconds))})
		}
		xys = append(xys, plotter.XY{X: math.Max(l.seconds[len(l.seconds)-1], 1e-3), Y: 1})
		line, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		line.Color, line.Width = modeColours[phase.Mode], vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("%s: p99 %s", phase.Mode, formatSeconds(l.P99Seconds)), line)
	}
	for _, name := range []string{"latency.svg", "latency.png"} {
		if err := p.Save(8*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}
