package analyze

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A node's findings handed again as they were, whatever order its pods
// came in, change nothing: the report keeps its slice. Changed ones are
// merged in the report's order (by type, then pod, then node), another
// node's left where they were, and a node that goes takes its own away.
func TestFindingOrderMergesOnlyWhatChanged(t *testing.T) {
	finding := func(typ FindingType, pod, node string) Finding {
		return Finding{Type: typ, Pod: "shop/" + pod, Node: node, Detail: string(typ) + " of " + pod}
	}
	n1 := []Finding{finding(EnvNeverUpdated, "a", "n1"), finding(Missing, "b", "n1"), finding(EnvNeverUpdated, "b", "n1")}
	n2 := []Finding{finding(Missing, "c", "n2")}
	o := newFindingOrder()
	o.replace("n1", nodeFindings(slices.Clone(n1)))
	o.replace("n2", nodeFindings(slices.Clone(n2)))
	first := o.all(nil)
	want := []string{"missing b n1", "missing c n2", "envNeverUpdated a n1", "envNeverUpdated b n1"}
	if got := findingKeys(first); !slices.Equal(got, want) {
		t.Fatalf("findings %v, want %v", got, want)
	}

	reversed := slices.Clone(n1)
	slices.Reverse(reversed) // its pods in another order
	o.replace("n1", nodeFindings(reversed))
	if again := o.all(nil); len(o.pending) != 0 || &again[0] != &first[0] {
		t.Errorf("the same findings in another order made a new slice")
	}

	o.replace("n1", nodeFindings([]Finding{finding(Missing, "a", "n1")}))
	o.replace("n2", nil)
	want = []string{"missing a n1"}
	if got := findingKeys(o.all(nil)); !slices.Equal(got, want) {
		t.Errorf("after n1 changed and n2 went: %v, want %v", got, want)
	}
	if got := findingKeys(first); got[0] != "missing b n1" {
		t.Errorf("the earlier report's slice changed: %v", got)
	}
}

func findingKeys(fs []Finding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		_, pod, _ := strings.Cut(f.Pod, "/")
		out[i] = fmt.Sprintf("%s %s %s", f.Type, pod, f.Node)
	}
	return out
}
