// Command growthchart draws how a scenario's cost grows with the number
// of nodes, from the report.json of several `nodeagent compare` runs that
// differ in --nodes (and in the S compare fitted to the machine): the
// apiserver's ConfigMap GET/s measured, with the model's as dashed lines
// and each run's S beside its points, and the agents' CPU and memory per
// node, one line per mode. docs/compare.md shows it.
//
//	go run ./hack/growthchart -o docs/images/growth.svg _output/scale/100 _output/scale/300 _output/scale/1000
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// report is the part of report.json this reads.
type report struct {
	Scenario struct {
		Nodes                int     `json:"nodes"`
		SyncFrequencySeconds float64 `json:"sync_frequency_seconds"`
	} `json:"scenario"`
	Phases []struct {
		Mode            string  `json:"mode"`
		APIServerGetQPS float64 `json:"apiserver_configmap_get_qps"`
		ModelGetQPS     float64 `json:"expected_apiserver_configmap_get_qps"`
		EtcdGetQPS      float64 `json:"etcd_configmap_get_qps"`
		MeasuredSeconds float64 `json:"measured_seconds"`
		CPUSeconds      float64 `json:"agent_cpu_seconds"`
		PeakRSSBytes    float64 `json:"agent_peak_rss_bytes"`
	} `json:"phases"`
}

var colours = map[string]color.RGBA{
	"every-sync":      {R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	"first-reference": {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"watch":           {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

func main() {
	out := flag.String("o", "growth.svg", "chart to write (.svg or .png)")
	flag.Parse()
	if flag.NArg() < 2 {
		fmt.Fprintln(os.Stderr, "usage: growthchart -o chart.svg <compare output dir>... (two or more runs)")
		os.Exit(2)
	}
	if err := run(*out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "growthchart:", err)
		os.Exit(1)
	}
}

func run(out string, dirs []string) error {
	// series[metric][mode] are (nodes, value) points.
	metrics := []struct{ title, unit string }{
		{"apiserver ConfigMap GET/s", "GET/s"},
		{"agents' CPU per node", "millicores"},
		{"agents' peak memory per node", "MiB"},
	}
	series := make([]map[string]plotter.XYs, len(metrics))
	for i := range series {
		series[i] = map[string]plotter.XYs{}
	}
	model := map[string]plotter.XYs{}
	var syncLabels plotter.XYLabels
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err != nil {
			return err
		}
		var r report
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		n := float64(r.Scenario.Nodes)
		top := 0.0
		for _, p := range r.Phases {
			top = max(top, p.APIServerGetQPS, p.ModelGetQPS)
		}
		syncLabels.XYs = append(syncLabels.XYs, plotter.XY{X: n, Y: top})
		syncLabels.Labels = append(syncLabels.Labels, fmt.Sprintf("S=%gm", r.Scenario.SyncFrequencySeconds/60))
		for _, p := range r.Phases {
			if p.MeasuredSeconds <= 0 || n == 0 {
				continue
			}
			series[0][p.Mode] = append(series[0][p.Mode], plotter.XY{X: n, Y: p.APIServerGetQPS})
			model[p.Mode] = append(model[p.Mode], plotter.XY{X: n, Y: p.ModelGetQPS})
			series[1][p.Mode] = append(series[1][p.Mode], plotter.XY{X: n, Y: 1000 * p.CPUSeconds / p.MeasuredSeconds / n})
			series[2][p.Mode] = append(series[2][p.Mode], plotter.XY{X: n, Y: p.PeakRSSBytes / n / (1 << 20)})
		}
	}
	plots := make([][]*plot.Plot, 1)
	for i, m := range metrics {
		p := plot.New()
		p.Title.Text = m.title
		p.X.Label.Text = "simulated nodes (30 pods each)"
		p.Y.Label.Text = m.unit
		p.Y.Min = 0
		// Bottom right is where the lines are not: costs per node fall
		// with nodes, and watch's GET/s lie on the axis, below its legend.
		p.Legend.Top, p.Legend.Left = false, false
		if i == 0 {
			p.Legend.YOffs = vg.Points(24)
		}
		p.Add(plotter.NewGrid())
		modes := make([]string, 0, len(series[i]))
		for mode := range series[i] {
			modes = append(modes, mode)
		}
		slices.Sort(modes)
		for _, mode := range modes {
			line, points, err := plotter.NewLinePoints(sortedByX(series[i][mode]))
			if err != nil {
				return err
			}
			c := colours[mode]
			line.Color, line.Width, points.Color, points.Shape = c, vg.Points(1.5), c, draw.CircleGlyph{}
			p.Add(line, points)
			p.Legend.Add(mode, line)
			if i == 0 && mode != "watch" {
				modelLine, err := plotter.NewLine(sortedByX(model[mode]))
				if err != nil {
					return err
				}
				modelLine.Color, modelLine.Width, modelLine.Dashes = c, vg.Points(1), []vg.Length{vg.Points(4), vg.Points(3)}
				p.Add(modelLine)
				p.Legend.Add(mode+" (model)", modelLine)
			}
		}
		if i == 0 {
			labels, err := plotter.NewLabels(syncLabels)
			if err != nil {
				return err
			}
			labels.Offset = vg.Point{X: -vg.Points(14), Y: vg.Points(6)}
			p.Add(labels)
			p.Y.Max *= 1.15 // room for the labels above the highest point
		}
		plots[0] = append(plots[0], p)
	}
	width, height := 12*vg.Inch, 4*vg.Inch
	var canvas vg.CanvasWriterTo
	switch filepath.Ext(out) {
	case ".png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.New(width, height)}
	default:
		canvas = vgsvg.New(width, height)
	}
	tiles := draw.Tiles{Rows: 1, Cols: len(metrics), PadX: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2}
	dc := draw.New(canvas)
	canvases := plot.Align(plots, tiles, dc)
	for j, p := range plots[0] {
		p.Draw(canvases[0][j])
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := canvas.WriteTo(f); err != nil {
		return err
	}
	return f.Close()
}

func sortedByX(xys plotter.XYs) plotter.XYs {
	slices.SortFunc(xys, func(a, b plotter.XY) int { return int(a.X - b.X) })
	return xys
}
