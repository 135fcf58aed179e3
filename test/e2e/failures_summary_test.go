//go:build e2e

package e2e

import (
	"io"
	"strings"
	"testing"
)

func TestFailureLogSummary(t *testing.T) {
	output := `=== RUN   TestA
    a_test.go:10: a passing test's log
--- PASS: TestA (0.00s)
=== RUN   TestB
=== RUN   TestB/one
    b_test.go:20: one's log
    b_test.go:21: one failed
        a continuation line
=== RUN   TestB/two
=== NAME  TestB/one
    b_test.go:22: one's cleanup
--- FAIL: TestB (1.00s)
    --- FAIL: TestB/one (0.50s)
    --- PASS: TestB/two (0.50s)
FAIL
`
	var log failureLog
	var copied strings.Builder
	log.parse(strings.NewReader(output), &copied)
	if copied.String() != output {
		t.Errorf("output not copied through unchanged:\n%s", copied.String())
	}
	got := log.summary()
	want := "=== failed tests, with the last 12 lines each logged (t.Log and t.Error alike):\n" +
		"--- FAIL: TestB/one\n    b_test.go:20: one's log\n    b_test.go:21: one failed\n    b_test.go:22: one's cleanup\n"
	if got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
	var none failureLog
	none.parse(strings.NewReader("=== RUN   TestA\n--- PASS: TestA (0.00s)\nPASS\n"), io.Discard)
	if s := none.summary(); s != "" {
		t.Errorf("summary of a passing run: %q", s)
	}
}
