// Package e2eutil holds what the end-to-end tests on the local control
// plane (test/e2e) and on kind (test/e2ekind) share: the nodeagent binary
// under test, and running `nodeagent compare` and reading its report.
package e2eutil

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/pkg/compare"
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
func ReadReport(t testing.TB, dir string) *compare.Report {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var report compare.Report
	if err := json.Unmarshal(data, &report); err != nil {
		t.Fatal(err)
	}
	return &report
}
