package convert

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// podSpecPaths are where each kind keeps its pod template's spec.
var podSpecPaths = map[string][]string{
	"Pod":                   {"spec"},
	"Deployment":            {"spec", "template", "spec"},
	"StatefulSet":           {"spec", "template", "spec"},
	"DaemonSet":             {"spec", "template", "spec"},
	"ReplicaSet":            {"spec", "template", "spec"},
	"ReplicationController": {"spec", "template", "spec"},
	"Job":                   {"spec", "template", "spec"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template", "spec"},
}

// containerLists are the pod spec's lists of containers whose mounts count.
var containerLists = []string{"initContainers", "containers", "ephemeralContainers"}

// podSpec is one pod template's spec in a document.
type podSpec struct {
	node *yaml.RNode
	// subPathUsers maps each volume to the containers that mount part of
	// it with subPath or subPathExpr.
	subPathUsers map[string][]string
	windows      bool
}

// readPodSpec reads what converting node's volumes needs of it.
func readPodSpec(node *yaml.RNode) (*podSpec, error) {
	spec := &podSpec{node: node, subPathUsers: map[string][]string{}}
	if os, err := node.Pipe(yaml.Lookup("os", "name")); err == nil && os != nil && yaml.GetValue(os) == string(corev1.Windows) {
		spec.windows = true
	}
	for _, list := range containerLists {
		containers, err := node.Pipe(yaml.Lookup(list))
		if err != nil || containers == nil {
			continue
		}
		elements, err := containers.Elements()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", list, err)
		}
		for _, c := range elements {
			var container corev1.Container
			if err := decode(c, &container); err != nil {
				return nil, fmt.Errorf("%s: %w", list, err)
			}
			for _, m := range container.VolumeMounts {
				if m.SubPath != "" || m.SubPathExpr != "" {
					spec.subPathUsers[m.Name] = appendOnce(spec.subPathUsers[m.Name], container.Name)
				}
			}
		}
	}
	return spec, nil
}

// convertVolumes converts the spec's configMap volumes that want says to,
// and returns what it did to each volume.
func (s *podSpec) convertVolumes(want func(volume string) bool) ([]VolumeResult, error) {
	volumes, err := s.node.Pipe(yaml.Lookup("volumes"))
	if err != nil || volumes == nil {
		return nil, err
	}
	elements, err := volumes.Elements()
	if err != nil {
		return nil, fmt.Errorf("volumes: %w", err)
	}
	var results []VolumeResult
	for _, v := range elements {
		result, err := s.convertVolume(v, want)
		if err != nil {
			return nil, err
		}
		results = append(results, result)
	}
	return results, nil
}

// convertVolume converts one volume if it can and is wanted.
func (s *podSpec) convertVolume(v *yaml.RNode, want func(volume string) bool) (VolumeResult, error) {
	var volume corev1.Volume
	if err := decode(v, &volume); err != nil {
		return VolumeResult{}, fmt.Errorf("volumes: %w", err)
	}
	r := VolumeResult{Volume: volume.Name, SubPathUsers: s.subPathUsers[volume.Name]}
	switch {
	case volume.ConfigMap == nil:
		r.Reason = notConfigMap(volume)
	case s.windows:
		r.Reason = "a Windows pod: the driver runs on Linux nodes"
	case !want(volume.Name):
		r.Reason = "not chosen (--volume, --workload)"
	}
	if r.Reason != "" {
		return r, nil
	}
	r.InPlace = len(r.SubPathUsers) > 0
	attrs, err := driverAttributes(volume.ConfigMap, r.InPlace)
	if err != nil {
		r.Reason = err.Error()
		return r, nil
	}
	source, err := csiVolumeSource(attrs)
	if err != nil {
		return VolumeResult{}, err
	}
	replaceField(v, "configMap", "csi", source)
	r.Converted = true
	return r, nil
}

// replaceField gives the field key of the mapping m the name newKey and
// the value value, in its place: the fields around it keep their order,
// and the key its comments.
func replaceField(m *yaml.RNode, key, newKey string, value *yaml.RNode) {
	content := m.YNode().Content
	for i := 0; i+1 < len(content); i += 2 {
		if content[i].Value == key {
			content[i].Value = newKey
			content[i+1] = value.YNode()
			return
		}
	}
}

// notConfigMap says why a volume that is not a configMap volume stays.
func notConfigMap(v corev1.Volume) string {
	switch {
	case v.Projected != nil:
		return "a projected volume: the driver serves one ConfigMap per volume"
	case v.Secret != nil:
		return "a secret volume: the driver serves ConfigMaps only"
	case v.CSI != nil:
		return "a csi volume already"
	}
	return "not a configMap volume"
}

// decode reads node into out through its JSON form.
func decode(node *yaml.RNode, out any) error {
	data, err := node.MarshalJSON()
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	list = append(list, s)
	sort.Strings(list)
	return list
}

// describe is a VolumeResult in a line of the summary.
func (r VolumeResult) describe() string {
	switch {
	case r.Converted && r.InPlace:
		return fmt.Sprintf("volume %s: converted, updates: inPlace (mounted with subPath by %s)", r.Volume, strings.Join(r.SubPathUsers, ", "))
	case r.Converted:
		return fmt.Sprintf("volume %s: converted", r.Volume)
	}
	return fmt.Sprintf("volume %s: left as it is: %s", r.Volume, r.Reason)
}
