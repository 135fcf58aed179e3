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
// unconverted volume that only that mode moves. pods itself where nothing
// changes; a copy otherwise.
func (c Cluster) movablePods(pods []inventory.PodInfo) []inventory.PodInfo {
	if c.DriverSecrets || !slices.ContainsFunc(pods, func(p inventory.PodInfo) bool { return anySecretsMode(p.Unconverted) }) {
		return pods
	}
	out := slices.Clone(pods)
	for i := range out {
		out[i].Unconverted = movable(out[i].Unconverted, false)
	}
	return out
}

// movableSightings is sightings as movablePods makes pods.
func movableSightings(sightings []Sighting, secretsMode bool) []Sighting {
	if secretsMode || !slices.ContainsFunc(sightings, func(s Sighting) bool { return anySecretsMode(s.Unconverted) }) {
		return sightings
	}
	out := slices.Clone(sightings)
	for i := range out {
		out[i].Unconverted = movable(out[i].Unconverted, false)
	}
	return out
}

// movable is volumes without those only the Secrets mode moves, unless
// secretsMode: volumes itself where none is, a new slice otherwise.
func movable(volumes []inventory.UnconvertedVolume, secretsMode bool) []inventory.UnconvertedVolume {
	if secretsMode || !anySecretsMode(volumes) {
		return volumes
	}
	out := slices.DeleteFunc(slices.Clone(volumes), func(v inventory.UnconvertedVolume) bool { return v.SecretsMode })
	if len(out) == 0 {
		return nil
	}
	return out
}

func anySecretsMode(volumes []inventory.UnconvertedVolume) bool {
	return slices.ContainsFunc(volumes, func(v inventory.UnconvertedVolume) bool { return v.SecretsMode })
}
