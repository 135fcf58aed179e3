package faulttable

import (
	"strings"
	"testing"
)

// A row with a recovery shows it rounded to 10 ms, one without "n/a".
func TestMarkdown(t *testing.T) {
	got := Markdown([]Row{
		{Fault: "disk full", Strategy: "watch", Reads: 4089, DataLost: "none", RecoverySeconds: 0.1004, Requests: "n/a", Test: "TestDiskFaults/disk_full"},
		{Fault: "40 random volumes", Strategy: "cache", DataLost: "n/a", Requests: "n/a", Test: "TestPropertyVolumesAgainstKubelet"},
	})
	for _, want := range []string{
		"| disk full | watch | 4089 | 0 | none | 100ms | n/a | `TestDiskFaults/disk_full` |\n",
		"| 40 random volumes | cache | 0 | 0 | n/a | n/a | n/a | `TestPropertyVolumesAgainstKubelet` |\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}
