package report

import (
	"fmt"
	"image/color"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// BarGroup is one set of bars, one value per category, drawn side by side
// with the other groups' bars of the same category.
type BarGroup struct {
	Label  string
	Colour color.Color
	Values []float64
}

// Bars is a grouped bar chart: a cluster of bars per category (a scenario,
// say), one bar per group (a measure) in each.
type Bars struct {
	Title, YLabel string
	Categories    []string
	Groups        []BarGroup
}

// Save writes the chart as <base>.svg and <base>.png in dir, 8 × 4.5 in.
func (b Bars) Save(dir, base string) error {
	p := plot.New()
	p.Title.Text, p.Y.Label.Text = b.Title, b.YLabel
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	width := vg.Points(40 / float64(max(len(b.Groups), 1)))
	maxY := 1.0
	for i, g := range b.Groups {
		if len(g.Values) != len(b.Categories) {
			return fmt.Errorf("bar group %s has %d values for %d categories", g.Label, len(g.Values), len(b.Categories))
		}
		for _, v := range g.Values {
			maxY = max(maxY, v)
		}
		bars, err := plotter.NewBarChart(plotter.Values(g.Values), width)
		if err != nil {
			return fmt.Errorf("bar group %s: %w", g.Label, err)
		}
		bars.Color, bars.LineStyle.Width = g.Colour, 0
		bars.Offset = width * vg.Length(float64(i)-float64(len(b.Groups)-1)/2)
		p.Add(bars)
		p.Legend.Add(g.Label, bars)
	}
	p.NominalX(b.Categories...)
	p.Y.Min, p.Y.Max = 0, maxY*(1.15+0.1*float64(len(b.Groups)))
	for _, ext := range []string{"svg", "png"} {
		name := base + "." + ext
		if err := p.Save(8*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}
