package analyze

import (
	"context"
	"fmt"
	"sync"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
	"golang.org/x/sync/errgroup"
)

// ReadSettings returns each node's settings: version and TTL from the
// inventory, strategy and sync frequency from the node's /configz where
// reader may read it (nil: never), assume otherwise. A node whose /configz
// fails falls back to assume with a note; the others go on. warnings say
// what applies to every node.
func ReadSettings(ctx context.Context, reader configzReader, nodes []inventory.NodeInfo, assume Assumptions, workers int, progress inventory.Progress) (map[string]Settings, []string, error) {
	settings := make(map[string]Settings, len(nodes))
	for _, n := range nodes {
		settings[n.Name] = AssumedSettings(n, assume)
	}
	assumed := fmt.Sprintf("strategy %s and sync frequency %s assumed for every node (--assume-strategy, --assume-sync-frequency)", assume.Strategy, assume.SyncFrequency)
	if reader == nil {
		return settings, []string{"/configz not read (--read-configz=false): " + assumed}, nil
	}
	ok, why, err := reader.allowed(ctx)
	if err != nil {
		return settings, []string{fmt.Sprintf("%v: %s", err, assumed)}, nil
	}
	if !ok {
		reason := "this user may not get nodes/proxy"
		if why != "" {
			reason += " (" + why + ")"
		}
		return settings, []string{reason + ", which analyze never requires: " + assumed}, nil
	}
	if progress == nil {
		progress = func(string, int, bool) {}
	}
	var mu sync.Mutex
	read := 0
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(max(workers, 1))
	for _, n := range nodes {
		g.Go(func() error {
			body, err := reader.read(ctx, n.Name)
			var config kubeletConfig
			if err == nil {
				config, err = parseConfigz(body)
			}
			mu.Lock()
			defer mu.Unlock()
			s := settings[n.Name]
			if err != nil {
				s.Notes = append(s.Notes, fmt.Sprintf("/configz failed (%v): settings assumed", err))
			} else {
				s.Strategy, s.SyncFrequency, s.FeatureGates, s.Source = config.Strategy, config.SyncFrequency, config.FeatureGates, FromConfigz
			}
			settings[n.Name] = s
			read++
			if read%100 == 0 {
				progress("kubelet configs", read, false)
			}
			return ctx.Err()
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	progress("kubelet configs", read, true)
	return settings, nil, nil
}
