// Package docruns keeps the measured figures of the docs true to the runs
// that measured them. A run the docs quote is kept as a record,
// docs/runs/NAME.json: the command line, the commit, date and machine, and
// the report the command wrote (trimmed to what the docs use). The docs
// quote a record only between markers,
//
//	<!-- run NAME WHAT [ARGS] -->...<!-- /run -->
//
// whose content Render writes from the record (`make docs`) and Check
// compares with it (`make verify`): a figure edited by hand, a record gone,
// a page that quotes a run without naming it, and a record whose command
// no longer parses all fail. WHAT is one of the renderers of render.go: a
// whole table, the run's own line, or one figure in a sentence.
package docruns

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Record is one run the docs quote.
type Record struct {
	// Name is the record's file name without .json.
	Name string `json:"-"`
	// Command is what the reader runs to re-run it, as written in the docs
	// (`make demo`, or a nodeagent command line).
	Command string `json:"command"`
	// Args, for a nodeagent command, are its arguments after the binary
	// (subcommand first): Check holds their flags to the current ones.
	Args []string `json:"args,omitempty"`
	// Commit is the code measured, Date the day, Machine where.
	Commit  string `json:"commit"`
	Date    string `json:"date"`
	Machine string `json:"machine"`
	// Took is how long the command ran.
	Took string `json:"took,omitempty"`
	// Kind says what Report holds: "compare" is compare's report.json,
	// "analyze" analyze's, "reliability" the e2e suite's rows.json of
	// faults and storms (internal/faulttable), "table" an e2e test's
	// table (pkg/report.Table), "bench" go test's benchmarks summarised
	// (BenchRun), "timings" lists of timed stages by key
	// (ParseTimings), such as `make test`'s stages and those of its kind
	// run.
	Kind   string          `json:"kind"`
	Report json.RawMessage `json:"report"`
	// Changelog says what earlier runs of this record measured and why
	// the figures moved: history kept out of the reference pages.
	Changelog []string `json:"changelog,omitempty"`
}

// Load reads every record of dir, by name.
func Load(dir string) (map[string]*Record, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	records := map[string]*Record{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var r Record
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r.Name = strings.TrimSuffix(filepath.Base(path), ".json")
		records[r.Name] = &r
	}
	return records, nil
}

// Save writes r into dir as NAME.json.
func (r *Record) Save(dir string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, r.Name+".json"), append(data, '\n'), 0o644)
}

// Value is the figure at path in the record's report: keys separated by
// "/", where a key into a list picks the element by index or by the value
// of its "mode", "class" or "name" field.
func (r *Record) Value(path string) (any, error) {
	var v any
	if err := json.Unmarshal(r.Report, &v); err != nil {
		return nil, fmt.Errorf("run %s: its report: %w", r.Name, err)
	}
	for _, key := range strings.Split(path, "/") {
		next, ok := step(v, key)
		if !ok {
			return nil, fmt.Errorf("run %s: no %q in its report (at %q)", r.Name, path, key)
		}
		v = next
	}
	return v, nil
}

// step follows one key of a path.
func step(v any, key string) (any, bool) {
	switch v := v.(type) {
	case map[string]any:
		next, ok := v[key]
		return next, ok
	case []any:
		if i, err := strconv.Atoi(key); err == nil {
			if i < 0 || i >= len(v) {
				return nil, false
			}
			return v[i], true
		}
		for _, e := range v {
			if m, ok := e.(map[string]any); ok {
				for _, field := range []string{"mode", "class", "name"} {
					if m[field] == key {
						return e, true
					}
				}
			}
		}
	}
	return nil, false
}

// Names lists records' names, sorted.
func Names(records map[string]*Record) []string {
	names := make([]string, 0, len(records))
	for n := range records {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
