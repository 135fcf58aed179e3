package compare

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/ttl"
)

// Each node's model uses that node's own TTL, not the first node's: on a
// cluster whose nodes differ (a TTL controller between tiers), the
// prediction is the sum of each node's.
func TestEachNodeKeepsItsOwnTTL(t *testing.T) {
	node := func(name, annotation string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if annotation != "" {
			n.Annotations = map[string]string{ttl.Annotation: annotation}
		}
		return n
	}
	client := fake.NewClientset(node("a", "0"), node("b", "300"), node("c", ""), node("d", "300"))
	s := DefaultScenario()
	s.Nodes = 4
	layout := Layout(s, DefaultNamespace)
	for i, name := range []string{"a", "b", "c", "d"} {
		layout[i].Name = name
	}
	ttls, err := nodeTTLs(context.Background(), client, layout)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{"a": 0, "b": 300 * time.Second, "c": ttl.DefaultTTL, "d": 300 * time.Second}
	for name, d := range want {
		if ttls[name] != d {
			t.Errorf("node %s: TTL %s, want %s", name, ttls[name], d)
		}
	}
	if common, lowest, highest := CommonTTL(ttls); common != 300*time.Second || lowest != 0 || highest != 300*time.Second {
		t.Errorf("CommonTTL: %s in %s..%s; want 5m0s in 0s..5m0s", common, lowest, highest)
	}

	got := Prediction(layout, s.SyncFrequency, modes.FirstReference, ttls).ByKind[model.ConfigMap]
	var sum float64
	for _, n := range layout {
		one := Prediction([]model.Node{n}, s.SyncFrequency, modes.FirstReference, ttls).ByKind[model.ConfigMap]
		sum += one.APIServerGetQPS
	}
	firstNodes := Prediction(layout, s.SyncFrequency, modes.FirstReference, sameTTL(layout, 0)).ByKind[model.ConfigMap]
	if !nearlyEqual(got.APIServerGetQPS, sum) || nearlyEqual(got.APIServerGetQPS, firstNodes.APIServerGetQPS) {
		t.Errorf("predicted %.3f GET/s, want each node's own sum %.3f (with the first node's TTL everywhere: %.3f)",
			got.APIServerGetQPS, sum, firstNodes.APIServerGetQPS)
	}
	if _, err := nodeTTLs(context.Background(), client, []model.Node{{Name: "gone"}}); err == nil {
		t.Error("nodeTTLs of a node that does not exist succeeded")
	}
}
