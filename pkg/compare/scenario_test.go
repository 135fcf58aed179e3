package compare

import (
	"strings"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
)

func TestValidateSaysWhatToChange(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Scenario)
		want   string
	}{
		{"no nodes", func(s *Scenario) { s.Nodes = 0 }, "--nodes"},
		{"negative phase", func(s *Scenario) { s.PhaseDuration = -time.Second }, "--phase-duration"},
		{"fractional ttl", func(s *Scenario) { s.TTL = 1500 * time.Millisecond }, "--ttl"},
		{"agent throttled", func(s *Scenario) { s.PodsPerNode = 300 }, "lower --pods-per-node"},
		{"too many pods", func(s *Scenario) {
			s.Nodes, s.PodsPerNode, s.SyncFrequency, s.PhaseDuration = 1001, 30, time.Hour, 3*time.Hour
		}, "more than this machine"},
		{"apiserver saturated", func(s *Scenario) { s.Nodes, s.PodsPerNode = 400, 30 }, "in total"},
		{"pool too small", func(s *Scenario) { s.ConfigMapsPerPod, s.SharedConfigMaps = 3, 2 }, "--shared-configmaps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := DefaultScenario()
			tt.change(&s)
			if err := s.ValidateOnThisMachine(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
	if err := DefaultScenario().ValidateOnThisMachine(); err != nil {
		t.Errorf("the default scenario is invalid: %v", err)
	}
	// This machine's limits are for fleets on this machine: agents on a
	// cluster's own nodes may send that much.
	s := DefaultScenario()
	s.Nodes, s.PodsPerNode = 400, 30
	if err := s.Validate(); err != nil {
		t.Errorf("400 nodes of 30 pods, agents elsewhere: %v", err)
	}
	s.Nodes, s.PhaseDuration = 0, 0
	if err := s.ValidateFlags(); err != nil {
		t.Errorf("a DaemonSet run's flags, nodes and window left to the cluster: %v", err)
	}
}

func TestParseModes(t *testing.T) {
	if m, err := modes.ParseModes("every-sync, watch"); err != nil || len(m) != 2 {
		t.Errorf("got %v, %v", m, err)
	}
	for _, bad := range []string{"", "poll", "watch,watch"} {
		if _, err := modes.ParseModes(bad); err == nil {
			t.Errorf("modes.ParseModes(%q) succeeded", bad)
		}
	}
}
