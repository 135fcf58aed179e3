// Package faulttable is the reliability table of docs/reliability.md: one
// row per fault or storm the e2e suite puts an agent through. The suite
// writes its rows as rows.json and as the Markdown table beside it; the
// docs quote a recorded run's rows through the same Markdown, so the page
// and the run cannot disagree on the format.
package faulttable

import (
	"fmt"
	"strings"
	"time"
)

// Row is one fault or storm and what the agent's volumes went through.
type Row struct {
	Fault    string `json:"fault"`
	Strategy string `json:"strategy"`
	// Reads are the workload's whole-volume reads, BadReads those that
	// found a file torn, mixed or missing.
	Reads    int64 `json:"reads"`
	BadReads int64 `json:"bad_reads"`
	// DataLost is "none", or what a workload lost.
	DataLost string `json:"data_lost"`
	// RecoverySeconds is from the fault's end until the API's content was
	// on disk for every volume; zero when the row has none to measure.
	RecoverySeconds float64 `json:"recovery_seconds"`
	// Requests says what the agent sent during and after the fault,
	// against before it.
	Requests string `json:"requests"`
	// Test is the test that measured it, for `go test -run`.
	Test string `json:"test"`
}

// Markdown is the rows as the docs' table.
func Markdown(rows []Row) string {
	var b strings.Builder
	b.WriteString("| Fault | Strategy | Reads checked | Bad reads | Data lost | Recovery | Requests | Test |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		recovery := "n/a"
		if r.RecoverySeconds > 0 {
			recovery = (time.Duration(r.RecoverySeconds * float64(time.Second))).Round(10 * time.Millisecond).String()
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %s | %s | `%s` |\n",
			r.Fault, r.Strategy, r.Reads, r.BadReads, r.DataLost, recovery, r.Requests, r.Test)
	}
	return b.String()
}
