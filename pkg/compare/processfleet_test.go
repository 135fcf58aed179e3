package compare

import (
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"strings"
	"testing"
)

// A run whose processes cannot fit in this machine's memory is refused
// before anything starts, with the number of nodes that would fit.
func TestProcessFleetChecksMemory(t *testing.T) {
	kubelets := &processFleet{nodes: make([]model.Node, 100000)}
	err := kubelets.checkMemory([]Mode{ModeEverySync, ModeKubeletV136})
	if err == nil || !strings.Contains(err.Error(), "reference kubelet") || !strings.Contains(err.Error(), "lower --nodes to") {
		t.Errorf("100,000 reference kubelets: %v; want a refusal naming the kubelets and the nodes that fit", err)
	}
	agents := &processFleet{nodes: make([]model.Node, 100000), agentBinary: "nodeagent"}
	if err := agents.checkMemory(nil); err == nil || !strings.Contains(err.Error(), "nodeagent process") {
		t.Errorf("100,000 agent processes: %v; want a refusal naming the agents' processes", err)
	}
	one := &processFleet{nodes: make([]model.Node, 1)}
	if err := one.checkMemory([]Mode{ModeKubeletV136}); err != nil {
		t.Errorf("one reference kubelet: %v", err)
	}
}
