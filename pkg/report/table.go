package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
)

// Table is a header and rows of cells, already formatted. Its JSON is
// what e2e tests write for a table record (internal/docruns).
type Table struct {
	Header []string   `json:"header"`
	Rows   [][]string `json:"rows"`
}

// WriteText prints t as right-aligned text columns, two spaces apart.
func (t Table) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, row := range append([][]string{t.Header}, t.Rows...) {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

// Markdown renders t as a Markdown table.
func (t Table) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(t.Header, " | "), strings.Repeat("---|", len(t.Header)))
	for _, row := range t.Rows {
		fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
	}
	return b.String()
}

// WriteJSON writes v, indented, to path. Reports' keys are read by tools:
// add keys freely, never rename one.
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Ratio returns a/b, or NaN when b is zero.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// FormatRatio shows a ratio with two decimals, "-" when there is none.
func FormatRatio(r float64) string {
	if math.IsNaN(r) {
		return "-"
	}
	return fmt.Sprintf("%.2f", r)
}

// FormatMeasured formats v, or "-" where nothing was measured (zero,
// negative or NaN).
func FormatMeasured(v float64, format string) string {
	if v <= 0 || math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

// FormatSeconds shows a duration in seconds in the unit that reads best:
// milliseconds below one second.
func FormatSeconds(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.0f ms", s*1000)
	}
	return fmt.Sprintf("%.1f s", s)
}
