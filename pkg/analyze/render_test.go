package analyze

import (
	"strings"
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

// A result with assumed settings says so in its first line, in text and
// Markdown alike; one that read every node's /configz does not.
func TestAssumedSettingsComeFirst(t *testing.T) {
	r := Result{Cluster: Summary{Nodes: 5, NodesFromConfigz: 2}}
	var text strings.Builder
	if err := r.WriteText(&text, 5); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(text.String(), "\n")
	if !strings.HasPrefix(first, "ASSUMED: the kubelet strategy and sync frequency of 3 of the 5 nodes") {
		t.Errorf("first line %q, want the assumption", first)
	}
	if md := r.Markdown(5); !strings.Contains(strings.SplitN(md, "\n", 4)[2], "ASSUMED") {
		t.Errorf("Markdown's first summary line does not say ASSUMED:\n%s", md[:min(len(md), 400)])
	}
	r.Cluster.NodesFromConfigz = 5
	text.Reset()
	if err := r.WriteText(&text, 5); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "ASSUMED") {
		t.Error("a result with every node's /configz read says ASSUMED")
	}
}
