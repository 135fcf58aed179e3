package compare

import (
	"math"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// sameTTL gives every node of nodes the TTL d.
func sameTTL(nodes []model.Node, d time.Duration) map[string]time.Duration {
	ttls := make(map[string]time.Duration, len(nodes))
	for _, n := range nodes {
		ttls[n.Name] = d
	}
	return ttls
}

func nearlyEqual(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// A reference kubelet pairs with the nodeagent mode of its behaviour, and
// the model predicts the same load for both.
func TestReferenceModesPairWithTheirCounterparts(t *testing.T) {
	for ref, agentMode := range map[modes.Mode]modes.Mode{
		modes.KubeletV128: modes.EverySync, modes.KubeletV137: modes.FirstReference, modes.KubeletV137Watch: modes.WatchAtSync,
	} {
		if !ref.IsReferenceKubelet() || agentMode.IsReferenceKubelet() {
			t.Errorf("%s / %s: IsReferenceKubelet wrong", ref, agentMode)
		}
		if pairs := ref.PairsWith(); pairs[0] != agentMode {
			t.Errorf("%s pairs first with %v, want %s", ref, pairs, agentMode)
		}
		// The model of a reference kubelet is its counterpart's.
		s := DefaultScenario()
		nodes := Layout(s, DefaultNamespace)
		ttls := sameTTL(nodes, s.TTL)
		refLoad := Prediction(nodes, s.SyncFrequency, ref, ttls).ByKind[model.ConfigMap]
		load := Prediction(nodes, s.SyncFrequency, agentMode, ttls).ByKind[model.ConfigMap]
		// The model sums a map: the order, and so the last bits, vary.
		if !nearlyEqual(refLoad.APIServerGetQPS, load.APIServerGetQPS) || !nearlyEqual(refLoad.EtcdGetQPS, load.EtcdGetQPS) || refLoad.Watches != load.Watches {
			t.Errorf("%s: model %+v, %s's %+v", ref, refLoad, agentMode, load)
		}
		// The kubelet's behaviour, from the model's table of releases
		// and strategies, is the behaviour of the agents it pairs with.
		if rb, ab := ref.Behaviour(), agentMode.Behaviour(); rb != ab {
			t.Errorf("%s behaves as %s, %s as %s", ref, rb, agentMode, ab)
		}
	}
}
