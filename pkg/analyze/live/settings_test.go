package live

import (
	"context"
	"errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// TestNodeSettingsKeepWhatReadsSaid: a read of some nodes adds its
// warnings to those of the read of all, and a read that fails keeps every
// node, with the settings /configz gave before or assumed ones.
func TestNodeSettingsKeepWhatReadsSaid(t *testing.T) {
	assume := analyze.Assumptions{Strategy: model.StrategyCache, SyncFrequency: time.Minute}
	a := New(fake.NewClientset(), Options{Clock: clocktesting.NewFakeClock(time.Now()), Analyze: analyze.Options{Assume: assume}})
	fromConfigz := func(n inventory.NodeInfo) analyze.Settings {
		s := analyze.AssumedSettings(n, assume)
		s.Strategy, s.SyncFrequency, s.Source = model.StrategyWatch, 10*time.Second, analyze.FromConfigz
		return s
	}
	var readErr error
	var warnings []string
	a.readSettings = func(_ context.Context, nodes []inventory.NodeInfo) (map[string]analyze.Settings, []string, error) {
		if readErr != nil {
			return nil, nil, readErr
		}
		out := map[string]analyze.Settings{}
		for _, n := range nodes {
			out[n.Name] = fromConfigz(n)
		}
		return out, warnings, nil
	}
	nodes := []inventory.NodeInfo{{Name: "a", KubeletVersion: "v1.37.0"}, {Name: "b", KubeletVersion: "v1.37.0"}}
	inv := &inventory.Inventory{Nodes: nodes}

	warnings = []string{"b's kubelet settings assumed"}
	if _, w := a.settingsNow(context.Background(), inv); !slices.Equal(w, warnings) {
		t.Fatalf("first read: warnings %q, want %q", w, warnings)
	}

	// b changes, c appears, and reading them fails.
	readErr = errors.New("the apiserver is gone")
	a.changed("b")
	inv.Nodes = append(nodes, inventory.NodeInfo{Name: "c", KubeletVersion: "v1.36.0"})
	settings, w := a.settingsNow(context.Background(), inv)
	if !slices.Contains(w, "b's kubelet settings assumed") || !strings.Contains(strings.Join(w, "\n"), "the apiserver is gone") {
		t.Errorf("after a failed read of some nodes: warnings %q, want the first read's and the failure", w)
	}
	if s := settings["a"]; s.Source != analyze.FromConfigz {
		t.Errorf("a, not read again: %+v, want its /configz settings", s)
	}
	if s := settings["b"]; s.Source != analyze.FromConfigz || s.Strategy != model.StrategyWatch || len(s.Notes) == 0 {
		t.Errorf("b, read again and failed: %+v, want /configz's of before, with a note", s)
	}
	if s, ok := settings["c"]; !ok || s.Source != analyze.Assumed || s.Strategy != model.StrategyCache || len(s.Notes) == 0 {
		t.Errorf("c, never read: %+v (present %v), want assumed settings with a note", s, ok)
	}

	// The next read of every node replaces the warnings.
	readErr, warnings = nil, nil
	a.mu.Lock()
	a.settingsRead = time.Time{}
	a.mu.Unlock()
	if _, w := a.settingsNow(context.Background(), inv); len(w) != 0 {
		t.Errorf("a read of every node that warns of nothing: warnings %q", w)
	}
}

// settingsNow reads inv's nodes' settings as a computation does, with the
// Nodes changed since the last.
func (a *Analyzer) settingsNow(ctx context.Context, inv *inventory.Inventory) (map[string]analyze.Settings, []string) {
	a.mu.Lock()
	changed := a.nodesChanged
	a.nodesChanged = sets.New[string]()
	a.mu.Unlock()
	return a.nodeSettings(ctx, inv, changed)
}
