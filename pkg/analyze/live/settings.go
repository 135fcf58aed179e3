package live

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// settingsReader reads the settings of some nodes' kubelets: their
// settings, warnings that hold for every node read, and an error when the
// read as a whole failed. analyze.NodeSettings is the real one.
type settingsReader func(ctx context.Context, nodes []inventory.NodeInfo) (map[string]analyze.Settings, []string, error)

// nodeSettings are the settings of inv's nodes: those read before, those
// of new or changed nodes read now, and every node's again once
// SettingsInterval has passed.
//
// What a read says stays as long as the settings it read: a read of every
// node replaces the warnings, a read of some adds its own to the others'
// (a node whose settings were assumed before keeps its warning). A read
// that fails loses no node: each keeps the strategy and sync frequency
// that /configz gave before, or the assumed ones, with a note that says
// so.
//
// changed are the nodes whose Node changed since the last read: taken
// with the other changes at once, so that a Node's change is read from the
// inventory it is in, never before it.
func (a *Analyzer) nodeSettings(ctx context.Context, inv *inventory.Inventory, changed sets.Set[string]) (map[string]analyze.Settings, []string) {
	a.mu.Lock()
	all := a.settingsRead.IsZero()
	old := a.settings
	a.mu.Unlock()

	var read []inventory.NodeInfo
	settings := make(map[string]analyze.Settings, len(inv.Nodes))
	for _, n := range inv.Nodes {
		if s, ok := old[n.Name]; ok && !all && !changed.Has(n.Name) {
			settings[n.Name] = s
			continue
		}
		read = append(read, n)
	}
	warnings := a.warnings
	if len(read) > 0 {
		fresh, w, err := a.readSettings(ctx, read)
		if err != nil {
			w = append(w, fmt.Sprintf("reading the settings of %d kubelets failed, those read before kept and the others assumed: %v", len(read), err))
		}
		for _, n := range read {
			if s, ok := fresh[n.Name]; ok {
				settings[n.Name] = s
				continue
			}
			settings[n.Name] = keptSettings(n, old, a.opts.Analyze.Assume)
		}
		if all {
			warnings = w
		} else {
			warnings = union(a.warnings, w)
		}
	}
	a.mu.Lock()
	a.settings, a.warnings = settings, warnings
	if all {
		a.settingsRead = a.clock.Now()
	}
	a.mu.Unlock()
	return settings, warnings
}

// keptSettings are node's settings when reading them failed: its version
// and TTL as the inventory has them now, the strategy and sync frequency
// read from /configz before, or assumed.
func keptSettings(node inventory.NodeInfo, old map[string]analyze.Settings, assume analyze.Assumptions) analyze.Settings {
	s := analyze.AssumedSettings(node, assume)
	if prev, ok := old[node.Name]; ok && prev.Source == analyze.FromConfigz {
		s.Strategy, s.SyncFrequency, s.Source = prev.Strategy, prev.SyncFrequency, prev.Source
		s.Notes = append(s.Notes, "settings not read again: /configz's of the last read kept")
		return s
	}
	s.Notes = append(s.Notes, "settings not read: assumed")
	return s
}

// union is a's warnings and then those of b that a does not have.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, w := range b {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}
