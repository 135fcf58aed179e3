package modes

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// Every mode has its own visible colour in the chart.
func TestEveryModeHasAColour(t *testing.T) {
	seen := map[string]Mode{}
	for _, m := range Modes {
		c := m.spec().colour
		if c.A == 0 {
			t.Errorf("mode %s has no colour", m)
		}
		key := fmt.Sprint(c)
		if other, dup := seen[key]; dup {
			t.Errorf("modes %s and %s share a colour", m, other)
		}
		seen[key] = m
	}
}

// Each reference kubelet runs the binary make refkubelet builds for its
// release, with its strategy, behaving as the model's table says.
func TestReferenceKubeletsRunTheirBinaries(t *testing.T) {
	if k := KubeletV137Watch.spec().kubelet; k.Binary() != "refkubelet-v1.37" || k.Strategy != model.StrategyWatch {
		t.Errorf("kubelet-v1.37-watch runs %s with %s", k.Binary(), k.Strategy)
	}
	if k := KubeletV128.spec().kubelet; k.Binary() != "refkubelet-v1.28" || KubeletV128.Behaviour() != model.EverySync {
		t.Errorf("kubelet-v1.28 runs %s, behaving as %s", k.Binary(), KubeletV128.Behaviour())
	}
	if _, err := ParseModes("kubelet-v1.28,every-sync,kubelet-v1.37,first-reference"); err != nil {
		t.Error(err)
	}
	// A retired kubelet is read from records, and refused for a new run.
	if _, err := ParseModes("kubelet-v1.36"); err == nil || !strings.Contains(err.Error(), "kubelet-v1.37 replaces it") {
		t.Errorf("ParseModes(kubelet-v1.36): %v, want a refusal that names kubelet-v1.37", err)
	}
	if old := Mode("kubelet-v1.36-watch"); !old.IsReferenceKubelet() || old.Colour() != KubeletV137Watch.Colour() || old.PairsWith()[0] != WatchAtSync {
		t.Errorf("the retired kubelet-v1.36-watch no longer reads as it did")
	}
}
