package e2ekind

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// writeDocTable writes what a test measured as NAME.json in the suite's
// output directory (_output/e2e-kind), the table a page of docs/ shows:
// `go run ./hack/docruns record -kind table -report
// _output/e2e-kind/NAME.json` keeps it as a record. A test that failed
// writes nothing, so a record is always of a passing run.
func writeDocTable(t *testing.T, name string, table report.Table) {
	t.Helper()
	if t.Failed() {
		return
	}
	data, err := json.MarshalIndent(table, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(outputDir, name+".json"), append(data, '\n'), 0o644)
	}
	if err != nil {
		t.Errorf("writing the docs' table: %v", err)
	}
}
