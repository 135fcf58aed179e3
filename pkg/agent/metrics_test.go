package agent

import (
	"strings"
	"testing"
)

// TestVolumeMetricsLeaveOutThePods: the CSI driver's metrics are the
// volumes' alone, and its nodeagent_info names no strategy, which a driver
// does not have.
func TestVolumeMetricsLeaveOutThePods(t *testing.T) {
	families, err := NewVolumeMetrics("v1.2.3").Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
		if f.GetName() != "nodeagent_info" {
			continue
		}
		for _, l := range f.GetMetric()[0].GetLabel() {
			if l.GetName() != "version" {
				t.Errorf("the driver's nodeagent_info has label %s=%q: want the version alone", l.GetName(), l.GetValue())
			}
		}
	}
	for _, want := range []string{MetricVolumeOps, MetricVolumesMounted, "nodeagent_info"} {
		if !names[want] {
			t.Errorf("the driver's metrics lack %s", want)
		}
	}
	for name := range names {
		if strings.Contains(name, "pod") || name == MetricConfigMapGets || name == MetricCacheLookups {
			t.Errorf("the driver's metrics have %s, which only pods or the agent's cache would move", name)
		}
	}
}
