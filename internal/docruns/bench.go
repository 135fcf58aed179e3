package docruns

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
	"golang.org/x/perf/benchunit"
)

// BenchRun is a bench run's report: each benchmark of `go test -bench`'s
// output (`make bench`'s _output/bench.txt) summarised as benchstat
// summarises it, the median of its samples and the median's 95 %
// confidence interval, with no assumption on the samples' distribution.
type BenchRun struct {
	Benchmarks []Benchmark `json:"benchmarks"`
}

// Benchmark is one benchmark's summary per unit (sec/op, B/op,
// allocs/op, as benchfmt tidies go test's units).
type Benchmark struct {
	// Name is the benchmark's name without "Benchmark" and without the
	// GOMAXPROCS suffix, sub-benchmarks included: "WriteFirst/small".
	Name    string                  `json:"name"`
	Package string                  `json:"package"`
	Units   map[string]BenchSummary `json:"units"`
}

// BenchSummary is a sample's median, its confidence interval and its
// size. Too few samples give no interval: Low and High are then absent.
type BenchSummary struct {
	Median  float64  `json:"median"`
	Low     *float64 `json:"low,omitempty"`
	High    *float64 `json:"high,omitempty"`
	Samples int      `json:"samples"`
}

// ParseBench summarises go test's benchmark output, benchmarks in the
// order they first appear.
func ParseBench(r io.Reader) (BenchRun, error) {
	type key struct{ pkg, name string }
	var order []key
	samples := map[key]map[string][]float64{}
	reader := benchfmt.NewReader(r, "bench.txt")
	for reader.Scan() {
		res, ok := reader.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		base, parts := res.Name.Parts()
		name := string(base)
		for _, p := range parts {
			if !strings.HasPrefix(string(p), "-") {
				name += string(p)
			}
		}
		k := key{res.GetConfig("pkg"), name}
		if samples[k] == nil {
			samples[k] = map[string][]float64{}
			order = append(order, k)
		}
		for _, v := range res.Values {
			samples[k][v.Unit] = append(samples[k][v.Unit], v.Value)
		}
	}
	if err := reader.Err(); err != nil {
		return BenchRun{}, err
	}
	if len(order) == 0 {
		return BenchRun{}, fmt.Errorf("no benchmark results")
	}
	var run BenchRun
	for _, k := range order {
		b := Benchmark{Name: k.name, Package: k.pkg, Units: map[string]BenchSummary{}}
		for unit, values := range samples[k] {
			s := benchmath.AssumeNothing.Summary(benchmath.NewSample(values, &benchmath.DefaultThresholds), 0.95)
			summary := BenchSummary{Median: s.Center, Samples: len(values)}
			if !math.IsInf(s.Lo, 0) && !math.IsInf(s.Hi, 0) {
				summary.Low, summary.High = &s.Lo, &s.Hi
			}
			b.Units[unit] = summary
		}
		run.Benchmarks = append(run.Benchmarks, b)
	}
	return run, nil
}

// benchRows is a bench run's benchmarks whose names start with one of
// prefixes, for the bench renderer.
func benchRows(r *Record, prefixes []string) (string, error) {
	if r.Kind != "bench" {
		return "", fmt.Errorf("run %s: bench renders bench runs, not %q", r.Name, r.Kind)
	}
	var run BenchRun
	if err := json.Unmarshal(r.Report, &run); err != nil {
		return "", fmt.Errorf("run %s: %w", r.Name, err)
	}
	table, err := benchTable(run, prefixes)
	if err != nil {
		return "", fmt.Errorf("run %s: %w", r.Name, err)
	}
	return "\n" + table, nil
}

// benchTable is a bench run's benchmarks whose names start with one of
// prefixes (all, without any), as a Markdown table: per benchmark, its
// time, bytes and allocations per operation, and any unit of its own
// (b.ReportMetric), each as benchstat writes them, the median ± the
// confidence interval's widest side in per cent.
func benchTable(run BenchRun, prefixes []string) (string, error) {
	var selected []Benchmark
	extra := map[string]bool{} // units a benchmark reports beyond go test's own
	for _, bench := range run.Benchmarks {
		if len(prefixes) > 0 && !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(bench.Name, p) }) {
			continue
		}
		selected = append(selected, bench)
		for unit := range bench.Units {
			if !slices.Contains(standardUnits, unit) {
				extra[unit] = true
			}
		}
	}
	if len(selected) == 0 {
		return "", fmt.Errorf("no benchmark named %q", prefixes)
	}
	units := slices.Sorted(maps.Keys(extra))
	var b strings.Builder
	b.WriteString("| benchmark | time/op | B/op | allocs/op |")
	for _, u := range units {
		b.WriteString(" " + u + " |")
	}
	b.WriteString("\n|---|---|---|---|" + strings.Repeat("---|", len(units)) + "\n")
	for _, bench := range selected {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |", bench.Name,
			bench.Units["sec/op"].format("s"), bench.Units["B/op"].format("B"), bench.Units["allocs/op"].format(""))
		for _, u := range units {
			b.WriteString(" " + bench.Units[u].format("#") + " |")
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}

// standardUnits are go test's own: every table shows the first three,
// and none the throughput that b.SetBytes derives from the time.
var standardUnits = []string{"sec/op", "B/op", "allocs/op", "B/s"}

// format is the summary as benchstat writes it, to three figures:
// "14.6 ns ± 1 %", "4.00 KiB ± 0 %"; a count of allocations whole; a
// benchmark's own unit ("#") to three significant figures.
func (s BenchSummary) format(unit string) string {
	if s.Samples == 0 {
		return "-"
	}
	var value string
	switch unit {
	case "":
		value = fmt.Sprintf("%.0f", s.Median)
	case "#": // a unit of the benchmark's own: three figures
		value = strconv.FormatFloat(s.Median, 'g', 3, 64)
	case "B":
		value = withPrefix(benchunit.Scale(s.Median, benchunit.Binary), unit)
	default:
		value = withPrefix(benchunit.Scale(s.Median, benchunit.Decimal), unit)
	}
	if s.Low == nil || s.High == nil {
		return value + " ± ∞"
	}
	spread := (benchmath.Summary{Center: s.Median, Lo: *s.Low, Hi: *s.High}).PctRangeString()
	return value + " ± " + strings.TrimSuffix(spread, "%") + " %"
}

// withPrefix writes benchunit's "14.60n" as "14.6 ns" and "1.500Ki" as
// "1.50 KiB": three figures, a space, the prefix and the unit.
func withPrefix(scaled, unit string) string {
	i := strings.IndexFunc(scaled, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(scaled)
	}
	number, prefix := scaled[:i], scaled[i:]
	if prefix == "u" {
		prefix = "µ"
	}
	if v, err := strconv.ParseFloat(number, 64); err == nil {
		decimals := 0
		if v > 0 {
			decimals = max(0, 2-int(math.Floor(math.Log10(v))))
		}
		number = strconv.FormatFloat(v, 'f', decimals, 64)
	}
	return number + " " + prefix + unit
}
