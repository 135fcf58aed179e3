//go:build e2e

package e2e

import (
	"path/filepath"
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/report"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// writeDocTable writes a table the docs quote as _output/tables/NAME.json.
func writeDocTable(t *testing.T, name string, table report.Table) {
	t.Helper()
	e2eutil.WriteDocTable(t, filepath.Join("..", "..", "_output", "tables"), name, table)
}
