package analyze

import (
	"slices"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// The driver's modes decide what move-to-driver and notConverted count:
// its ConfigMap mode serves configMap volumes; its Secrets mode (nodeagent
// csi --secrets, the chart's csi.secrets.enabled) secret volumes and
// projected volumes of ConfigMap and Secret sources too, and its webhook
// converts them. The inventory marks the volumes only the Secrets mode
// moves (inventory.UnconvertedVolume.SecretsMode); a Cluster whose
// DriverSecrets is unset leaves them with the kubelet.

// movablePods is pods with, where c does not assume the Secrets mode, no
// unconverted volume that only that mode moves.
func (c Cluster) movablePods(pods []inventory.PodInfo) []inventory.PodInfo {
	return movableIn(pods, c.DriverSecrets, func(p *inventory.PodInfo) *[]inventory.UnconvertedVolume { return &p.Unconverted })
}

// movableSightings is sightings as movablePods makes pods.
func movableSightings(sightings []Sighting, secretsMode bool) []Sighting {
	return movableIn(sightings, secretsMode, func(s *Sighting) *[]inventory.UnconvertedVolume { return &s.Unconverted })
}

// movableIn is items, each of whose unconverted volumes (at unconverted)
// loses those only the Secrets mode moves unless secretsMode: items
// itself where nothing changes, a copy otherwise.
func movableIn[T any](items []T, secretsMode bool, unconverted func(*T) *[]inventory.UnconvertedVolume) []T {
	if secretsMode || !slices.ContainsFunc(items, func(item T) bool { return anySecretsMode(*unconverted(&item)) }) {
		return items
	}
	out := slices.Clone(items)
	for i := range out {
		if volumes := unconverted(&out[i]); anySecretsMode(*volumes) {
			*volumes = slices.DeleteFunc(slices.Clone(*volumes), func(v inventory.UnconvertedVolume) bool { return v.SecretsMode })
			if len(*volumes) == 0 {
				*volumes = nil
			}
		}
	}
	return out
}

func anySecretsMode(volumes []inventory.UnconvertedVolume) bool {
	return slices.ContainsFunc(volumes, func(v inventory.UnconvertedVolume) bool { return v.SecretsMode })
}
