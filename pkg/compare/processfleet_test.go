package compare

import (
	"strings"
	"testing"
)

// A run whose processes cannot fit in this machine's memory is refused
// before anything starts, with the number of nodes that would fit.
func TestProcessFleetChecksMemory(t *testing.T) {
	err := checkMemory(100000, true)
	if err == nil || !strings.Contains(err.Error(), "reference kubelet") || !strings.Contains(err.Error(), "lower --nodes to") {
		t.Errorf("100,000 reference kubelets: %v; want a refusal naming the kubelets and the nodes that fit", err)
	}
	if err := checkMemory(100000, false); err == nil || !strings.Contains(err.Error(), "nodeagent process") {
		t.Errorf("100,000 agent processes: %v; want a refusal naming the agents' processes", err)
	}
	if err := checkMemory(1, true); err != nil {
		t.Errorf("one reference kubelet: %v", err)
	}
}
