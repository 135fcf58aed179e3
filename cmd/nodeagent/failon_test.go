//go:build !agentonly

package main

import (
	"errors"
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/analyze"
)

// --fail-on exits 3 only for the types it names, and says what it found.
func TestFailOnFindings(t *testing.T) {
	r := analyze.Result{Summary: analyze.FindingsSummary{Findings: map[analyze.FindingType]int{analyze.StaleSinceStart: 2, analyze.EnvNeverUpdated: 5}}}
	types, err := parseFindingTypes([]string{"missing", " staleSinceStart"})
	if err != nil {
		t.Fatal(err)
	}
	err = failOnFindings(r, types)
	var coded exitError
	if !errors.As(err, &coded) || coded.code != exitFindings || coded.msg != "found 2 staleSinceStart (--fail-on)" {
		t.Errorf("got %v, want exit code %d for 2 staleSinceStart", err, exitFindings)
	}
	if err := failOnFindings(r, []analyze.FindingType{analyze.Missing}); err != nil {
		t.Errorf("no missing finding, but %v", err)
	}
	if err := failOnFindings(r, nil); err != nil {
		t.Errorf("without --fail-on: %v", err)
	}
}
