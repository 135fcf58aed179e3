//go:build !agentonly

package main

import (
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/nodeagent-io/nodeagent/pkg/compare"
)

// A large run without --sync-frequency gets the shortest whole minute this
// machine serves, and a window of two mean sync intervals; a set flag is
// left alone, and Validate then says what to change.
func TestFitToMachine(t *testing.T) {
	tests := []struct {
		name             string
		nodes, perNode   int
		args             []string
		wantS, wantPhase time.Duration
	}{
		{"the demo's scale keeps its S", 20, 10, nil, 5 * time.Second, time.Minute},
		{"300 nodes: the kubelet's default", 300, 30, nil, time.Minute, compare.MinPhaseDuration(time.Minute)},
		{"1,000 nodes: four minutes", 1000, 30, nil, 4 * time.Minute, compare.MinPhaseDuration(4 * time.Minute)},
		{"a set phase duration is kept", 1000, 30, []string{"--phase-duration=20m"}, 4 * time.Minute, 20 * time.Minute},
		{"a set S is kept", 1000, 30, []string{"--sync-frequency=1m"}, time.Minute, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := compare.DefaultScenario()
			s.Nodes, s.PodsPerNode = tt.nodes, tt.perNode
			fs := pflag.NewFlagSet("compare", pflag.ContinueOnError)
			fs.DurationVar(&s.SyncFrequency, "sync-frequency", s.SyncFrequency, "")
			fs.DurationVar(&s.PhaseDuration, "phase-duration", s.PhaseDuration, "")
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			fitToMachine(fs, &s)
			if s.SyncFrequency != tt.wantS || s.PhaseDuration != tt.wantPhase {
				t.Errorf("S %s, phase %s; want %s, %s", s.SyncFrequency, s.PhaseDuration, tt.wantS, tt.wantPhase)
			}
			if len(tt.args) == 0 && s.Validate() != nil {
				t.Errorf("the fitted scenario does not validate: %v", s.Validate())
			}
		})
	}
}
