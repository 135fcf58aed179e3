// Command growthchart draws how a scenario's cost grows with the number
// of nodes, from the report.json of several `nodeagent compare` runs that
// differ in --nodes (and in the S compare fitted to the machine): the
// apiserver's ConfigMap GET/s measured, with the model's as dashed lines
// and each run's S beside its points, and the agents' CPU and memory per
// node, one line per mode. docs/compare.md shows it.
//
//	go run ./hack/growthchart -o docs/images/growth.svg _output/scale/100 _output/scale/300 _output/scale/1000
//	go run ./hack/growthchart -o docs/images/growth.svg docs/runs/scale-100.json docs/runs/scale-300.json docs/runs/scale-1000.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/nodeagent-io/nodeagent/internal/docruns"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
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

func main() {
	out := flag.String("o", "growth.svg", "chart to write (.svg or .png)")
	flag.Parse()
	if flag.NArg() < 2 {
		fmt.Fprintln(os.Stderr, "usage: growthchart -o chart.svg <compare output dir or docs/runs/NAME.json>... (two or more runs)")
		os.Exit(2)
	}
	if err := run(*out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "growthchart:", err)
		os.Exit(1)
	}
}

// metrics are the chart's panels, left to right.
var metrics = []struct{ title, unit string }{
	{"apiserver ConfigMap GET/s", "GET/s"},
	{"agents' CPU per node", "millicores"},
	{"agents' peak memory per node", "MiB"},
}

// growth is what the runs measured, as (nodes, value) points.
type growth struct {
	// series[metric][mode]; model[mode] is the model's GET/s.
	series     []map[string]plotter.XYs
	model      map[string]plotter.XYs
	syncLabels plotter.XYLabels
}

func run(out string, dirs []string) error {
	g, err := readRuns(dirs)
	if err != nil {
		return err
	}
	panels := make([][]*plot.Plot, 1)
	for i := range metrics {
		p, err := g.panel(i)
		if err != nil {
			return err
		}
		panels[0] = append(panels[0], p)
	}
	return save(out, panels)
}

// readReport is the report.json of a compare output directory, or the
// report kept in a run's record (docs/runs/NAME.json, internal/docruns).
func readReport(path string) ([]byte, error) {
	if !strings.HasSuffix(path, ".json") {
		return os.ReadFile(filepath.Join(path, "report.json"))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var record docruns.Record
	if err := json.Unmarshal(data, &record); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if record.Kind != "compare" {
		return nil, fmt.Errorf("%s: a record of a %q run, not of a compare run", path, record.Kind)
	}
	return record.Report, nil
}

// readRuns reads each run's report.
func readRuns(dirs []string) (*growth, error) {
	g := &growth{model: map[string]plotter.XYs{}}
	for range metrics {
		g.series = append(g.series, map[string]plotter.XYs{})
	}
	for _, dir := range dirs {
		data, err := readReport(dir)
		if err != nil {
			return nil, err
		}
		var r report
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		n := float64(r.Scenario.Nodes)
		top := 0.0
		for _, p := range r.Phases {
			top = max(top, p.APIServerGetQPS, p.ModelGetQPS)
		}
		g.syncLabels.XYs = append(g.syncLabels.XYs, plotter.XY{X: n, Y: top})
		g.syncLabels.Labels = append(g.syncLabels.Labels, fmt.Sprintf("S=%gm", r.Scenario.SyncFrequencySeconds/60))
		for _, p := range r.Phases {
			if p.MeasuredSeconds <= 0 || n == 0 {
				continue
			}
			g.series[0][p.Mode] = append(g.series[0][p.Mode], plotter.XY{X: n, Y: p.APIServerGetQPS})
			g.model[p.Mode] = append(g.model[p.Mode], plotter.XY{X: n, Y: p.ModelGetQPS})
			g.series[1][p.Mode] = append(g.series[1][p.Mode], plotter.XY{X: n, Y: 1000 * p.CPUSeconds / p.MeasuredSeconds / n})
			g.series[2][p.Mode] = append(g.series[2][p.Mode], plotter.XY{X: n, Y: p.PeakRSSBytes / n / (1 << 20)})
		}
	}
	return g, nil
}

// panel draws metric i, one line per mode; the GET/s panel adds the
// model's lines (dashed) and each run's S.
func (g *growth) panel(i int) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = metrics[i].title
	p.X.Label.Text = "simulated nodes (30 pods each)"
	p.Y.Label.Text = metrics[i].unit
	p.Y.Min = 0
	// Bottom right is where the lines are not: costs per node fall
	// with nodes, and watch's GET/s lie on the axis, below its legend.
	p.Legend.Top, p.Legend.Left = false, false
	if i == 0 {
		p.Legend.YOffs = vg.Points(24)
	}
	p.Add(plotter.NewGrid())
	for _, mode := range slices.Sorted(maps.Keys(g.series[i])) {
		line, points, err := plotter.NewLinePoints(sortedByX(g.series[i][mode]))
		if err != nil {
			return nil, err
		}
		c := modes.Mode(mode).Colour()
		line.Color, line.Width, points.Color, points.Shape = c, vg.Points(1.5), c, draw.CircleGlyph{}
		p.Add(line, points)
		p.Legend.Add(mode, line)
		if i == 0 && mode != string(modes.Watch) {
			modelLine, err := plotter.NewLine(sortedByX(g.model[mode]))
			if err != nil {
				return nil, err
			}
			modelLine.Color, modelLine.Width, modelLine.Dashes = c, vg.Points(1), []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(modelLine)
			p.Legend.Add(mode+" (model)", modelLine)
		}
	}
	if i == 0 {
		labels, err := plotter.NewLabels(g.syncLabels)
		if err != nil {
			return nil, err
		}
		labels.Offset = vg.Point{X: -vg.Points(14), Y: vg.Points(6)}
		p.Add(labels)
		p.Y.Max *= 1.15 // room for the labels above the highest point
	}
	return p, nil
}

// save draws the panels side by side into out, SVG or PNG by its extension.
func save(out string, panels [][]*plot.Plot) error {
	width, height := 12*vg.Inch, 4*vg.Inch
	var canvas vg.CanvasWriterTo
	switch filepath.Ext(out) {
	case ".png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.New(width, height)}
	default:
		canvas = vgsvg.New(width, height)
	}
	tiles := draw.Tiles{Rows: 1, Cols: len(panels[0]), PadX: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2}
	canvases := plot.Align(panels, tiles, draw.New(canvas))
	for j, p := range panels[0] {
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
