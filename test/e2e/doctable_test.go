package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// writeDocTable writes what a test measured as _output/tables/NAME.json,
// the table a page of docs/ shows: `go run ./hack/docruns record -kind
// table -report _output/tables/NAME.json` keeps it as a record. A test
// that fails writes nothing, so a record is always of a passing run.
func writeDocTable(t *testing.T, name string, table report.Table) {
	t.Helper()
	if t.Failed() {
		return
	}
	path := filepath.Join("..", "..", "_output", "tables", name+".json")
	data, err := json.MarshalIndent(table, "", "  ")
	if err == nil {
		err = os.MkdirAll(filepath.Dir(path), 0o755)
	}
	if err == nil {
		err = os.WriteFile(path, append(data, '\n'), 0o644)
	}
	if err != nil {
		t.Errorf("writing the docs' table: %v", err)
		return
	}
	t.Logf("the docs' table: %s", path)
}
