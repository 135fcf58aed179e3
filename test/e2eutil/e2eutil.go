// Package e2eutil holds what the end-to-end tests on the local control
// plane (test/e2e) and on kind (test/e2ekind) share: the nodeagent binary
// under test, running `nodeagent compare` and reading its report, writing
// the tables the docs quote, and a Prometheus server with the dashboard's
// queries to run on it (prometheus.go).
package e2eutil

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/pkg/compare/results"
	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// NodeagentBinary is the binary under test: $NODEAGENT_BIN (make e2e and
// make e2e-kind set it), else _output/bin/nodeagent of this checkout.
func NodeagentBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("NODEAGENT_BIN"); bin != "" {
		return bin
	}
	dir, err := controlplane.FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "nodeagent")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v; run `make build` or `make e2e`", bin, err)
	}
	return bin
}

// RunCompare runs `nodeagent compare args...` to the end, logs its output
// and fails the test if it fails; it returns the output.
func RunCompare(t testing.TB, args ...string) string {
	t.Helper()
	output, err := exec.Command(NodeagentBinary(t), append([]string{"compare"}, args...)...).CombinedOutput()
	t.Logf("nodeagent compare:\n%s", output)
	if err != nil {
		t.Fatal(err)
	}
	return string(output)
}

// ReadReport reads the report.json that compare wrote into dir.
func ReadReport(t testing.TB, dir string) *results.Report {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var report results.Report
	if err := json.Unmarshal(data, &report); err != nil {
		t.Fatal(err)
	}
	return &report
}

// WriteDocTable writes what a test measured as DIR/NAME.json, the table
// a page of docs/ shows: `go run ./hack/docruns record -kind table
// -report DIR/NAME.json` keeps it as a record. A test that failed writes
// nothing, so a record is always of a passing run.
func WriteDocTable(t testing.TB, dir, name string, table report.Table) {
	t.Helper()
	if t.Failed() {
		return
	}
	path := filepath.Join(dir, name+".json")
	err := os.MkdirAll(dir, 0o755)
	if err == nil {
		err = report.WriteJSON(path, table)
	}
	if err != nil {
		t.Errorf("writing the docs' table: %v", err)
		return
	}
	t.Logf("the docs' table: %s", path)
}
