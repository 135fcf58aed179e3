package analyze

import (
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// The report says which nodes the before and after of kubernetes#120255
// applies to, and what the others cost instead.
func TestStrategiesLine(t *testing.T) {
	for _, tc := range []struct {
		behaviours map[model.Behaviour]int
		want       string
	}{
		{map[model.Behaviour]int{model.EverySync: 1, model.FirstReference: 2, model.Watch: 1, model.Get: 1},
			"The before and after of kubernetes#120255 applies to the 3 nodes on the Cache strategy (1 before v1.29, every sync a quorum GET); " +
				"the 1 node on Watch, the kubelet's default, pays one watch per object their pods read instead; the 1 node on Get sends a quorum GET at every pod sync."},
		{map[model.Behaviour]int{model.Watch: 5000},
			"No node runs the Cache strategy, so the before and after of kubernetes#120255 applies to none; " +
				"the 5000 nodes on Watch, the kubelet's default, pay one watch per object their pods read instead."},
	} {
		if got := strategiesLine(tc.behaviours); got != tc.want {
			t.Errorf("%v:\n got %s\nwant %s", tc.behaviours, got, tc.want)
		}
	}
}
