package processes

import (
	"strings"
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/compare"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/model"
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

// An agent process gets the mode's settings through the agent's own flag
// spelling; a reference kubelet gets the kubelet's flags and its strategy.
func TestProcessCommands(t *testing.T) {
	s := compare.DefaultScenario()
	node := model.Node{Name: "n1", Pods: make([]model.Pod, 3)}
	name, path, args := agentCommand(s, "/bin/nodeagent")(modes.WatchAtSync, node, "/kc", "/root")
	joined := strings.Join(args, " ")
	for _, want := range []string{"run --kubeconfig=/kc", "--node-name=n1", "--root-dir=/root", "--configmap-strategy=Watch", "--remount-on-change=false", "--sync-frequency=5s", "--http-address="} {
		if !strings.Contains(joined, want) {
			t.Errorf("agent %s %s: args %q lack %q", name, path, joined, want)
		}
	}
	name, path, args = kubeletCommand(s, "/bin")(modes.KubeletV128, node, "/kc", "/root")
	joined = strings.Join(args, " ")
	if name != "refkubelet-v1.28" || path != "/bin/refkubelet-v1.28" || !strings.Contains(joined, "--configmap-change-detection-strategy=Cache") || !strings.Contains(joined, "--max-pods=110") {
		t.Errorf("kubelet-v1.28 runs %s (%s) with %q", name, path, joined)
	}
}
