package compare

import (
	"fmt"
	"image/color"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// modeColours gives each mode one colour in every chart.
var modeColours = map[Mode]color.RGBA{
	ModeEverySync:      {R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red: the problem
	ModeFirstReference: {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue: the fix
	ModeWatch:          {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
	ModeWatchAtSync:    {R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}, // teal
	ModeGet:            {R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // purple
	// The reference kubelets: a lighter shade of their counterpart's.
	ModeKubeletV128:      {R: 0xff, G: 0x98, B: 0x96, A: 0xff},
	ModeKubeletV136:      {R: 0x9e, G: 0xc7, B: 0xe8, A: 0xff},
	ModeKubeletV136Watch: {R: 0x9e, G: 0xda, B: 0xe5, A: 0xff},
}

// writeChart draws GET/s over each phase's measured window: the apiserver
// as a solid line and etcd as a dashed one, one colour per mode.
func writeChart(r *Report, dir string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("ConfigMap GETs: %d nodes × %d pods, S=%gs, TTL=%gs",
		r.Scenario.Nodes, r.Scenario.PodsPerNode, r.Scenario.SyncFrequencySeconds, r.Scenario.TTLSeconds)
	p.X.Label.Text = "seconds into the measured window"
	p.Y.Label.Text = "requests per second"
	p.Y.Min = 0
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	maxY := 1.0
	for _, phase := range r.Phases {
		if len(phase.Samples) == 0 {
			continue
		}
		apiserver := make(plotter.XYs, len(phase.Samples))
		etcd := make(plotter.XYs, len(phase.Samples))
		for i, s := range phase.Samples {
			apiserver[i] = plotter.XY{X: s.Seconds, Y: s.APIServerQPS}
			etcd[i] = plotter.XY{X: s.Seconds, Y: s.EtcdQPS}
			maxY = max(maxY, s.APIServerQPS, s.EtcdQPS)
		}
		c := modeColours[phase.Mode]
		for _, series := range []struct {
			xys    plotter.XYs
			label  string
			dashes []vg.Length
		}{
			{apiserver, string(phase.Mode) + ": apiserver GET/s", nil},
			{etcd, string(phase.Mode) + ": etcd get/s", []vg.Length{vg.Points(5), vg.Points(3)}},
		} {
			line, points, err := plotter.NewLinePoints(series.xys)
			if err != nil {
				return err
			}
			line.Color, line.Width, line.Dashes = c, vg.Points(1.5), series.dashes
			points.Color, points.Shape = c, draw.CircleGlyph{}
			p.Add(line, points)
			p.Legend.Add(series.label, line)
		}
	}
	// Room above the data for the legend, two rows per mode.
	p.Y.Max = maxY * (1.15 + 0.2*float64(len(r.Phases)))
	for _, name := range []string{"chart.svg", "chart.png"} {
		if err := p.Save(8*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}
