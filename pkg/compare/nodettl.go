package compare

import (
	"context"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/ttl"
)

// nodeTTLs reads the TTL each of nodes' agents uses: its Node's
// annotation, or the default where it has none. Each node has its own: on
// a cluster whose TTL controller is moving between tiers, or where someone
// set one node's by hand, they differ, and each node's agent follows its
// own. It lists the Nodes once.
func nodeTTLs(ctx context.Context, client kubernetes.Interface, nodes []model.Node) (map[string]time.Duration, error) {
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the nodes' TTLs: %w", err)
	}
	annotations := make(map[string]map[string]string, len(list.Items))
	for _, n := range list.Items {
		annotations[n.Name] = n.Annotations
	}
	out := make(map[string]time.Duration, len(nodes))
	for _, n := range nodes {
		a, ok := annotations[n.Name]
		if !ok {
			return nil, fmt.Errorf("node %s is gone", n.Name)
		}
		out[n.Name] = ttl.OrDefault(ttl.FromAnnotations(a))
	}
	return out, nil
}

// CommonTTL is the TTL most of ttls' nodes use (the shortest of equally
// common ones), and the range of all of them: what the report shows and
// what paces a phase's start.
func CommonTTL(ttls map[string]time.Duration) (common, lowest, highest time.Duration) {
	count := map[time.Duration]int{}
	for _, d := range ttls {
		count[d]++
	}
	values := make([]time.Duration, 0, len(count))
	for d := range count {
		values = append(values, d)
	}
	sort.Slice(values, func(i, j int) bool { return values[i] < values[j] })
	if len(values) == 0 {
		return ttl.DefaultTTL, ttl.DefaultTTL, ttl.DefaultTTL
	}
	common = values[0]
	for _, d := range values {
		if count[d] > count[common] {
			common = d
		}
	}
	return common, values[0], values[len(values)-1]
}

// Prediction is the model's prediction for nodes in mode at sync frequency
// syncFrequency, each node with its own TTL (ttls, by name): what a phase
// sets beside its measurement (its ConfigMap part: nodeagent serves no
// Secret).
func Prediction(nodes []model.Node, syncFrequency time.Duration, mode modes.Mode, ttls map[string]time.Duration) model.Prediction {
	behaviour := mode.Behaviour()
	out := make([]model.Node, len(nodes))
	for i, n := range nodes {
		n.SyncFrequency, n.TTL, n.Behaviour = syncFrequency, ttls[n.Name], behaviour
		out[i] = n
	}
	return model.Predict(out)
}
