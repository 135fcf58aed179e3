package compare

import (
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// What a fleet's agents also serve joins the run's own pods on their
// nodes, and adds the nodes with none of the run's pods.
func TestWithServedPods(t *testing.T) {
	own := []model.Node{{Name: "n1", Pods: []model.Pod{{Name: "pod-00000", Volumes: 1, Reads: []model.Object{configMap("run", "cm-00000-0")}}}}}
	if got := withServedPods(own, nil); len(got) != 1 || len(got[0].Pods) != 1 {
		t.Errorf("with nothing else served: %+v, want the run's own", got)
	}
	other := model.Pod{Name: "web", Volumes: 2, Reads: []model.Object{configMap("a", "cfg"), configMap("b", "cfg")}}
	nodes := withServedPods(own, map[string][]model.Pod{"n2": nil, "n1": {other}})
	if len(nodes) != 2 || nodes[0].Name != "n1" || nodes[1].Name != "n2" {
		t.Fatalf("layout %+v, want n1 and n2", nodes)
	}
	// One ConfigMap name in two namespaces is two cache entries.
	refs := nodes[0].ReadersPerObject()
	if nodes[0].Volumes() != 3 || len(refs) != 3 || refs[configMap("a", "cfg")] != 1 || refs[configMap("b", "cfg")] != 1 {
		t.Errorf("n1 has %d volumes, references %v; want the run's 1 and a/cfg, b/cfg", nodes[0].Volumes(), refs)
	}
	if len(own[0].Pods) != 1 {
		t.Error("withServedPods changed the run's own layout")
	}
}
