//go:build e2e

package e2ekind

import (
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/report"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// writeDocTable writes a table the docs quote as NAME.json in the suite's
// output directory (_output/e2e-kind).
func writeDocTable(t *testing.T, name string, table report.Table) {
	t.Helper()
	e2eutil.WriteDocTable(t, outputDir, name, table)
}
