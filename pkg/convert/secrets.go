package convert

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// secretAttributes returns the driver's attributes for a secret volume, or
// why the driver cannot serve it as the kubelet would.
func secretAttributes(source *corev1.SecretVolumeSource, inPlace bool) (map[string]string, error) {
	attrs := map[string]string{podrefs.AttrSecret: source.SecretName}
	if err := setCommon(attrs, source.Optional, source.DefaultMode, source.DefaultUser, source.Items, inPlace); err != nil {
		return nil, err
	}
	parsed, err := parseBack(attrs)
	if err != nil {
		return nil, err
	}
	if parsed.Secret == nil || !sameSecretFiles(source, parsed.Secret) {
		return nil, errNotExact
	}
	return attrs, nil
}

// sourcesAttributes returns the driver's attributes for a projected volume
// of configMap and secret sources, or why the driver cannot serve it: a
// source of another kind (a service account's token volume has three),
// which stays with the kubelet.
func sourcesAttributes(source *corev1.ProjectedVolumeSource, inPlace bool) (map[string]string, error) {
	if others := otherSources(source.Sources); len(others) > 0 {
		return nil, fmt.Errorf("a projected volume with %s: the kubelet's to serve", strings.Join(others, ", "))
	}
	encoded, err := json.Marshal(source.Sources)
	if err != nil {
		return nil, err
	}
	attrs := map[string]string{podrefs.AttrSources: string(encoded)}
	if err := setCommon(attrs, nil, source.DefaultMode, source.DefaultUser, nil, inPlace); err != nil {
		return nil, err
	}
	parsed, err := parseBack(attrs)
	if err != nil {
		return nil, err
	}
	if parsed.Projected == nil || !sameProjectedFiles(source, parsed.Projected) {
		return nil, errNotExact
	}
	return attrs, nil
}

// otherSources names the sources the driver leaves to the kubelet.
func otherSources(sources []corev1.VolumeProjection) []string {
	var out []string
	for _, s := range sources {
		switch {
		case s.ServiceAccountToken != nil:
			out = append(out, "a serviceAccountToken source")
		case s.DownwardAPI != nil:
			out = append(out, "a downwardAPI source")
		case s.ClusterTrustBundle != nil:
			out = append(out, "a clusterTrustBundle source")
		case s.PodCertificate != nil:
			out = append(out, "a podCertificate source")
		}
	}
	return out
}

// sameSecretFiles is sameFiles for secret volumes.
func sameSecretFiles(volume, driver *corev1.SecretVolumeSource) bool {
	v, d := volume.DeepCopy(), driver.DeepCopy()
	for _, s := range []*corev1.SecretVolumeSource{v, d} {
		if s.DefaultMode == nil {
			s.DefaultMode = ptrTo(corev1.SecretVolumeSourceDefaultMode)
		}
		if s.Optional == nil {
			s.Optional = ptrTo(false)
		}
		if len(s.Items) == 0 {
			s.Items = nil
		}
	}
	return equality.Semantic.DeepEqual(v, d)
}

// sameProjectedFiles is sameFiles for projected volumes.
func sameProjectedFiles(volume, driver *corev1.ProjectedVolumeSource) bool {
	v, d := volume.DeepCopy(), driver.DeepCopy()
	for _, s := range []*corev1.ProjectedVolumeSource{v, d} {
		if s.DefaultMode == nil {
			s.DefaultMode = ptrTo(corev1.ProjectedVolumeSourceDefaultMode)
		}
	}
	return equality.Semantic.DeepEqual(v, d)
}
