package docruns

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/nodeagent-io/nodeagent/internal/faulttable"
	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/pkg/compare/results"
	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// The renderers a marker names (its WHAT):
//
//   - run: the run's line, "`COMMAND` at commit C, DATE, MACHINE, took T",
//     which names the run on the page;
//   - table: a compare run's tables as the command prints them, in a code
//     block;
//   - latency: a compare run's update latency per mode, as report.md's
//     Markdown table;
//   - resources: a compare run's CPU, memory and GET/s per mode, as a
//     Markdown table (results.Report.ResourceTable);
//   - summary: a compare run's GET/s at the apiserver and etcd per mode
//     against the model's, as a Markdown table (results.Report.SummaryTable);
//   - churn: a compare run's pods that came and went per mode, beside the
//     model's churn term, as a Markdown table (results.Report.ChurnTable);
//   - value FORMAT PATH: one figure of the report (Record.Value), written
//     with a Go format verb such as %.2f, or a cell of a table run's
//     table, rows/ROW/COLUMN, written with %s;
//   - ratio FORMAT PATH PATH: the first figure over the second;
//   - duration PATH: a figure in seconds as "47 m 18 s";
//   - took: how long the recorded command ran, as the record says it
//     ("22m18s");
//   - stages PATH [SKIP...]: a timings run's list of stages as a sentence,
//     "controlplane 3 m 47 s, refkubelet 6 m 5 s", leaving out the stages
//     named in SKIP;
//   - rows: a reliability run's table (internal/faulttable), as the e2e
//     suite writes it, or a table run's table (an e2e test's
//     report.Table);
//   - bench [PREFIX...]: a bench run's benchmarks (those whose names start
//     with a PREFIX) as a Markdown table, as benchstat summarises them;
//   - report TOP: an analyze run's report.md as `nodeagent analyze` writes
//     it with --top TOP, its title left out and its sections as level-4
//     headings, to sit inside a page's section.
func render(r *Record, what string, args []string) (string, error) {
	switch what {
	case "run":
		return runLine(r), nil
	case "table":
		return table(r)
	case "latency", "resources", "summary", "churn":
		run, err := compareReport(r, what)
		if err != nil {
			return "", err
		}
		switch what {
		case "latency":
			return "\n" + run.LatencyTable().Markdown(), nil
		case "summary":
			return "\n" + run.SummaryTable().Markdown(), nil
		case "churn":
			return "\n" + run.ChurnTable().Markdown(), nil
		}
		return "\n" + run.ResourceTable().Markdown(), nil
	case "value":
		return value(r, args)
	case "ratio":
		return ratio(r, args)
	case "took":
		if r.Took == "" {
			return "", fmt.Errorf("run %s records no duration", r.Name)
		}
		return r.Took, nil
	case "duration":
		if len(args) != 1 {
			return "", fmt.Errorf("duration wants a path, got %q", args)
		}
		v, err := number(r, args[0])
		if err != nil {
			return "", err
		}
		return FormatSeconds(v), nil
	case "rows":
		if r.Kind == "table" {
			return tableRows(r)
		}
		return faultRows(r)
	case "report":
		if len(args) != 1 {
			return "", fmt.Errorf("report wants the number of rows, got %q", args)
		}
		return analyzeReport(r, args[0])
	case "bench":
		return benchRows(r, args)
	case "stages":
		if len(args) < 1 {
			return "", fmt.Errorf("stages wants a path, got %q", args)
		}
		return stagesLine(r, args[0], args[1:])
	}
	return "", fmt.Errorf("unknown renderer %q: want run, table, latency, resources, summary, churn, value, ratio, took, duration, stages, rows, bench or report", what)
}

// runLine names the run: what to run, on what code, where and when.
func runLine(r *Record) string {
	line := fmt.Sprintf("`%s` at commit %s, %s, %s", r.Command, r.Commit, r.Date, r.Machine)
	if r.Took != "" {
		line += ", took " + r.Took
	}
	return line + " (record: docs/runs/" + r.Name + ".json)"
}

// compareReport is a compare run's report, for the renderer what.
func compareReport(r *Record, what string) (*results.Report, error) {
	if r.Kind != "compare" {
		return nil, fmt.Errorf("run %s: %s renders compare runs, not %q", r.Name, what, r.Kind)
	}
	var report results.Report
	if err := json.Unmarshal(r.Report, &report); err != nil {
		return nil, fmt.Errorf("run %s: %w", r.Name, err)
	}
	return &report, nil
}

// table is a compare run's tables, as `nodeagent compare` prints them.
func table(r *Record) (string, error) {
	run, err := compareReport(r, "table")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("\n```\n")
	run.WriteTable(&b)
	b.WriteString("```\n")
	return b.String(), nil
}

// analyzeReport is an analyze run's report.md, demoted to sit inside a
// page's section.
func analyzeReport(r *Record, topArg string) (string, error) {
	if r.Kind != "analyze" {
		return "", fmt.Errorf("run %s: report renders analyze runs, not %q", r.Name, r.Kind)
	}
	top, err := strconv.Atoi(topArg)
	if err != nil || top < 1 {
		return "", fmt.Errorf("report wants a number of rows of at least 1, got %q", topArg)
	}
	var result analyze.Result
	if err := json.Unmarshal(r.Report, &result); err != nil {
		return "", fmt.Errorf("run %s: %w", r.Name, err)
	}
	md := strings.TrimPrefix(result.Markdown(top), "# nodeagent analyze\n")
	return strings.ReplaceAll(md, "\n## ", "\n#### "), nil
}

// faultRows is a reliability run's table.
func faultRows(r *Record) (string, error) {
	if r.Kind != "reliability" {
		return "", fmt.Errorf("run %s: rows renders reliability runs, not %q", r.Name, r.Kind)
	}
	var report struct {
		Rows []faulttable.Row `json:"rows"`
	}
	if err := json.Unmarshal(r.Report, &report); err != nil {
		return "", fmt.Errorf("run %s: %w", r.Name, err)
	}
	return "\n" + faulttable.Markdown(report.Rows), nil
}

// tableRows is a table run's table: what an e2e test measured, as it
// wrote it.
func tableRows(r *Record) (string, error) {
	var t report.Table
	if err := json.Unmarshal(r.Report, &t); err != nil {
		return "", fmt.Errorf("run %s: %w", r.Name, err)
	}
	if len(t.Header) == 0 {
		return "", fmt.Errorf("run %s: its table has no header", r.Name)
	}
	return "\n" + t.Markdown(), nil
}

// number is the figure at path, which must be a number.
func number(r *Record, path string) (float64, error) {
	v, err := r.Value(path)
	if err != nil {
		return 0, err
	}
	f, ok := v.(float64)
	if !ok {
		return 0, fmt.Errorf("run %s: %s is %v, not a number", r.Name, path, v)
	}
	return f, nil
}

// value renders the renderer "value FORMAT PATH": one number or string of
// the record, formatted.
func value(r *Record, args []string) (string, error) {
	if len(args) != 2 {
		return "", fmt.Errorf("value wants a format and a path, got %q", args)
	}
	v, err := r.Value(args[1])
	if err != nil {
		return "", err
	}
	switch v := v.(type) {
	case float64, string:
		return fmt.Sprintf(args[0], v), nil
	}
	return "", fmt.Errorf("run %s: %s is %v, not a number or a string", r.Name, args[1], v)
}

// ratio renders "ratio FORMAT A B": two numbers of the record, divided.
func ratio(r *Record, args []string) (string, error) {
	if len(args) != 3 {
		return "", fmt.Errorf("ratio wants a format and two paths, got %q", args)
	}
	a, err := number(r, args[1])
	if err != nil {
		return "", err
	}
	b, err := number(r, args[2])
	if err != nil {
		return "", err
	}
	if b == 0 {
		return "", fmt.Errorf("run %s: %s is zero", r.Name, args[2])
	}
	return fmt.Sprintf(args[0], a/b), nil
}
