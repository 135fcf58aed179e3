package report

import (
	"fmt"
	"image/color"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Style is how a series is drawn.
type Style int

const (
	// Solid is a measured series: a line with a marker at each point.
	Solid Style = iota
	// Dashed is a second measured series of the same colour (etcd beside
	// the apiserver): long dashes and markers.
	Dashed
	// Model is a prediction: a thin line of short dashes, no markers.
	Model
	// Curve is a dense measured series (a distribution): a line, no
	// markers.
	Curve
)

// Point is one (x, y) of a series.
type Point struct{ X, Y float64 }

// Series is one line of a chart.
type Series struct {
	Label  string
	Colour color.Color
	Style  Style
	Points []Point
}

// Chart is a line chart with a legend at the top right; Save writes it.
type Chart struct {
	Title, XLabel, YLabel string
	// LogX draws the x axis on a logarithmic scale (every X must be
	// positive); YMax, when positive, fixes the top of the y axis.
	LogX bool
	YMax float64
	// LegendLeftOffset, when positive, puts the legend top left, that far
	// (in inches) from the axis: clear of a curve that rises first.
	LegendLeftOffset float64
	Series           []Series
}

// Save writes the chart as <base>.svg and <base>.png in dir, 8 × 4.5 in.
func (c Chart) Save(dir, base string) error {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = c.Title, c.XLabel, c.YLabel
	if c.LogX {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	}
	p.Legend.Top = true
	if c.LegendLeftOffset > 0 {
		p.Legend.Left, p.Legend.XOffs = true, vg.Length(c.LegendLeftOffset)*vg.Inch
	}
	p.Add(plotter.NewGrid())
	maxY, entries := 1.0, 0
	for _, s := range c.Series {
		if len(s.Points) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(s.Points))
		for i, pt := range s.Points {
			xys[i] = plotter.XY{X: pt.X, Y: pt.Y}
			maxY = max(maxY, pt.Y)
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("series %s: %w", s.Label, err)
		}
		line.Color, line.Width = s.Colour, vg.Points(1.5)
		switch s.Style {
		case Dashed:
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		case Model:
			line.Width, line.Dashes = vg.Points(1), []vg.Length{vg.Points(2), vg.Points(2)}
		}
		p.Add(line)
		if s.Style == Solid || s.Style == Dashed {
			points, err := plotter.NewScatter(xys)
			if err != nil {
				return err
			}
			points.Color, points.Shape = s.Colour, draw.CircleGlyph{}
			p.Add(points)
		}
		p.Legend.Add(s.Label, line)
		entries++
	}
	p.Y.Min = 0
	if c.YMax > 0 {
		p.Y.Max = c.YMax
	} else {
		// Room above the data for the legend: a tenth of the data's
		// height per entry.
		p.Y.Max = maxY * (1.15 + 0.1*float64(entries))
	}
	for _, ext := range []string{"svg", "png"} {
		name := base + "." + ext
		if err := p.Save(8*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}
