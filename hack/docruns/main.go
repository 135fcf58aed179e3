// Command docruns writes and checks the docs' quotes of recorded runs
// (internal/docruns).
//
//	go run ./hack/docruns render FILE...   # make docs: write every quote from its record
//	go run ./hack/docruns check FILE...    # make verify: fail where a quote or a record's command is out of date
//	go run ./hack/docruns record -name NAME -command CMD -report DIR/report.json [-kind analyze|reliability|table|bench] [-took D] -- ARGS...
//	                                       # keep a compare run (or an analyze run, the e2e suite's reliability rows, a test's table) as docs/runs/NAME.json
//	go run ./hack/docruns record -name NAME -command CMD -timings KEY=FILE... [-commit C -date D]
//	                                       # keep a run of timed stages (make test's _output/test-timings.txt)
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/nodeagent-io/nodeagent/internal/docruns"
	"github.com/nodeagent-io/nodeagent/internal/procstat"
)

const recordsDir = "docs/runs"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: docruns render|check|record ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "render":
		err = renderAll(os.Args[2:], false)
	case "check":
		err = renderAll(os.Args[2:], true)
	case "record":
		err = record(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want render, check or record", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "docruns:", err)
		os.Exit(1)
	}
}

// renderAll writes (or, with check, checks) every quote in files, and
// checks the records' commands against today's flags.
func renderAll(files []string, check bool) error {
	records, err := docruns.Load(recordsDir)
	if err != nil {
		return err
	}
	var problems []docruns.Problem
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		if check {
			problems = append(problems, docruns.Check(file, string(data), records)...)
			continue
		}
		rendered, found := docruns.Render(file, string(data), records)
		problems = append(problems, found...)
		if rendered != string(data) {
			if err := os.WriteFile(file, []byte(rendered), 0o644); err != nil {
				return err
			}
			fmt.Println("wrote", file)
		}
	}
	if check {
		problems = append(problems, docruns.CheckCommands(records, help)...)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problems with the docs' quotes of runs", len(problems))
	}
	return nil
}

// help is `nodeagent SUB --help`, from this checkout's code.
func help(sub string) (string, error) {
	var out bytes.Buffer
	cmd := exec.Command("go", "run", "./cmd/nodeagent", sub, "--help")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: %s", err, out.String())
	}
	return out.String(), nil
}

// record keeps a compare run's report, or a run's timed stages, as
// docs/runs/NAME.json.
func record(args []string) error {
	fs := flag.NewFlagSet("record", flag.ExitOnError)
	name := fs.String("name", "", "the record's name (docs/runs/NAME.json)")
	command := fs.String("command", "", "what the docs tell a reader to run (default: nodeagent and the arguments)")
	reportPath := fs.String("report", "", "the run's report: compare's or analyze's report.json, or the e2e suite's _output/reliability/rows.json")
	kind := fs.String("kind", "compare", "what -report is: compare, analyze, reliability, table (an e2e test's _output/tables/NAME.json), or bench (make bench's _output/bench.txt)")
	var timings timingsFlag
	fs.Var(&timings, "timings", "KEY=FILE: a timings file (hack/stages.sh's, hack/e2e-kind.sh's) kept under KEY; repeat for more (a timings run)")
	var figures timingsFlag
	fs.Var(&figures, "json", "KEY=FILE: with -timings, a JSON file of the run's other figures kept under KEY (hack/resources.sh's memory and disk)")
	took := fs.Duration("took", 0, "how long the command ran")
	commit := fs.String("commit", "", "the commit the run measured (default: this checkout's), for a run kept after the checkout moved on")
	date := fs.String("date", "", "the day of the run, YYYY-MM-DD (default: today)")
	note := fs.String("changelog", "", "a line for the record's changelog: what moved since the last run, and why")
	_ = fs.Parse(args)
	if *name == "" || (*reportPath == "") == (len(timings) == 0) {
		return errors.New("record needs -name and either -report or -timings")
	}
	if !slices.Contains([]string{"compare", "analyze", "reliability", "table", "bench"}, *kind) {
		return fmt.Errorf("-kind %q: want compare, analyze, reliability, table or bench", *kind)
	}
	if len(figures) > 0 && len(timings) == 0 {
		return errors.New("-json goes with -timings: a timings run's other figures")
	}
	report, err := readReport(*reportPath, *kind, timings, figures)
	if err != nil {
		return err
	}
	r := &docruns.Record{
		Name: *name, Command: *command, Args: fs.Args(), Commit: *commit, Date: *date,
		Machine: machine(), Kind: *kind, Report: report,
	}
	if len(timings) > 0 {
		r.Kind = "timings"
	}
	if r.Commit == "" {
		r.Commit = gitCommit()
	}
	if r.Date == "" {
		r.Date = time.Now().UTC().Format("2006-01-02")
	}
	if r.Command == "" {
		r.Command = "nodeagent " + strings.Join(r.Args, " ")
	}
	if *took > 0 {
		r.Took = took.Round(time.Second).String()
	}
	if old, err := docruns.Load(recordsDir); err == nil && old[*name] != nil {
		r.Changelog = old[*name].Changelog
	}
	if *note != "" {
		r.Changelog = append(r.Changelog, r.Date+": "+*note)
	}
	return r.Save(recordsDir)
}

// readReport is a run's report (a compare report without its samples,
// benchmarks summarised), or the stages of the timings files by key.
func readReport(reportPath, kind string, timings, figures timingsFlag) (json.RawMessage, error) {
	if reportPath != "" {
		report, err := os.ReadFile(reportPath)
		if err != nil {
			return nil, err
		}
		if kind == "bench" {
			run, err := docruns.ParseBench(bytes.NewReader(report))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", reportPath, err)
			}
			return json.Marshal(run)
		}
		trimmed, err := trim(report)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", reportPath, err)
		}
		return trimmed, nil
	}
	byKey := map[string]any{}
	for key, path := range timings {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		stages, err := docruns.ParseTimings(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		byKey[key] = stages
	}
	for key, path := range figures {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if !json.Valid(data) {
			return nil, fmt.Errorf("%s: not JSON", path)
		}
		byKey[key] = json.RawMessage(data)
	}
	return json.Marshal(byKey)
}

// timingsFlag is -timings KEY=FILE, repeated.
type timingsFlag map[string]string

func (t *timingsFlag) String() string { return fmt.Sprint(map[string]string(*t)) }

func (t *timingsFlag) Set(v string) error {
	key, path, ok := strings.Cut(v, "=")
	if !ok || key == "" || path == "" {
		return fmt.Errorf("want KEY=FILE, got %q", v)
	}
	if *t == nil {
		*t = timingsFlag{}
	}
	(*t)[key] = path
	return nil
}

// trim is a compare report without what the docs never quote: each
// phase's samples, which the chart already drew.
func trim(report []byte) (json.RawMessage, error) {
	var r map[string]any
	if err := json.Unmarshal(report, &r); err != nil {
		return nil, err
	}
	if phases, ok := r["phases"].([]any); ok {
		for _, p := range phases {
			if m, ok := p.(map[string]any); ok {
				delete(m, "samples")
			}
		}
	}
	return json.Marshal(r)
}

// gitCommit is the checkout's commit, -dirty when it has changes.
func gitCommit() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty", "--abbrev=7").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// machine is this machine in a few words.
func machine() string {
	gib := float64(procstat.KB("/proc/meminfo", "MemTotal:")) / (1 << 20)
	return fmt.Sprintf("%d cores, %.0f GiB, %s/%s", runtime.NumCPU(), gib, runtime.GOOS, runtime.GOARCH)
}
