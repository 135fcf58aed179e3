package report

import (
	"bytes"
	"encoding/json"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTable(t *testing.T) {
	tbl := Table{Header: []string{"mode", "GET/s"}, Rows: [][]string{{"every-sync", "43.82"}, {"watch", "0.00"}}}
	var text bytes.Buffer
	if err := tbl.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := "        mode  GET/s\n  every-sync  43.82\n       watch   0.00\n"
	if text.String() != want {
		t.Errorf("text table\n%q, want\n%q", text.String(), want)
	}
	md := "| mode | GET/s |\n|---|---|\n| every-sync | 43.82 |\n| watch | 0.00 |\n"
	if got := tbl.Markdown(); got != md {
		t.Errorf("Markdown\n%q, want\n%q", got, md)
	}
}

func TestFormatting(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{FormatRatio(Ratio(1, 4)), "0.25"},
		{FormatRatio(Ratio(1, 0)), "-"},
		{FormatMeasured(0, "%.1f"), "-"},
		{FormatMeasured(math.NaN(), "%.1f"), "-"},
		{FormatMeasured(4.56, "%.1f"), "4.6"},
		{FormatSeconds(0.0254), "25 ms"},
		{FormatSeconds(38.31), "38.3 s"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestWriteJSONAndChart(t *testing.T) {
	dir := t.TempDir()
	if err := WriteJSON(filepath.Join(dir, "r.json"), map[string]int{"nodes": 20}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "r.json"))
	var back map[string]int
	if err := json.Unmarshal(data, &back); err != nil || back["nodes"] != 20 {
		t.Errorf("r.json = %s (%v)", data, err)
	}
	red := color.RGBA{R: 0xd6, A: 0xff}
	c := Chart{Title: "t", XLabel: "x", YLabel: "y", Series: []Series{
		{Label: "measured", Colour: red, Points: []Point{{0, 1}, {1, 2}}},
		{Label: "model", Colour: red, Style: Model, Points: []Point{{0, 1.5}, {1, 1.5}}},
		{Label: "empty", Colour: red},
	}}
	if err := c.Save(dir, "chart"); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "chart.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"measured", "model"} {
		if !strings.Contains(string(svg), ">"+label+"<") {
			t.Errorf("chart.svg has no legend entry %q", label)
		}
	}
	if strings.Contains(string(svg), ">empty<") {
		t.Error("a series without points has a legend entry")
	}
	if info, err := os.Stat(filepath.Join(dir, "chart.png")); err != nil || info.Size() == 0 {
		t.Errorf("chart.png: %v", err)
	}
}
