package convert

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
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

// podFacts are what converting a pod spec's volumes reads of the rest of
// it.
type podFacts struct {
	// subPathUsers maps each volume to the containers that mount part of
	// it with subPath or subPathExpr.
	subPathUsers map[string][]string
	windows      bool
}

func factsOf(spec *corev1.PodSpec) podFacts {
	facts := podFacts{subPathUsers: map[string][]string{}, windows: spec.OS != nil && spec.OS.Name == corev1.Windows}
	visit := func(name string, mounts []corev1.VolumeMount) {
		for _, m := range mounts {
			if m.SubPath != "" || m.SubPathExpr != "" {
				facts.subPathUsers[m.Name] = appendOnce(facts.subPathUsers[m.Name], name)
			}
		}
	}
	for _, c := range spec.InitContainers {
		visit(c.Name, c.VolumeMounts)
	}
	for _, c := range spec.Containers {
		visit(c.Name, c.VolumeMounts)
	}
	for _, c := range spec.EphemeralContainers {
		visit(c.Name, c.VolumeMounts)
	}
	return facts
}

// plan decides what becomes of one volume, and returns the driver's
// attributes for a volume to convert.
func (f podFacts) plan(volume *corev1.Volume, want func(volume string) bool) (VolumeResult, map[string]string) {
	r := VolumeResult{Volume: volume.Name, SubPathUsers: f.subPathUsers[volume.Name]}
	switch {
	case volume.ConfigMap == nil:
		r.Reason = notConfigMap(*volume)
	case f.windows:
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
	r.Converted = true
	return r, attrs
}

// PodSpec converts the configMap volumes of spec that want chooses (nil:
// all) in place, and returns what it did to each volume.
func PodSpec(spec *corev1.PodSpec, want func(volume string) bool) []VolumeResult {
	if want == nil {
		want = func(string) bool { return true }
	}
	facts := factsOf(spec)
	results := make([]VolumeResult, 0, len(spec.Volumes))
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		r, attrs := facts.plan(v, want)
		if r.Converted {
			v.VolumeSource = corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
				Driver: podrefs.DriverName, ReadOnly: ptrTo(true), VolumeAttributes: attrs}}
		}
		results = append(results, r)
	}
	return results
}

// convertPodSpecNode converts the configMap volumes of the pod spec at
// node, editing the YAML tree in place, and returns what it did.
func convertPodSpecNode(node *yaml.RNode, want func(volume string) bool) ([]VolumeResult, error) {
	var spec corev1.PodSpec
	if err := decode(node, &spec); err != nil {
		return nil, err
	}
	volumes, err := node.Pipe(yaml.Lookup("volumes"))
	if err != nil || volumes == nil {
		return nil, err
	}
	elements, err := volumes.Elements()
	if err != nil {
		return nil, fmt.Errorf("volumes: %w", err)
	}
	if len(elements) != len(spec.Volumes) {
		return nil, fmt.Errorf("volumes: %d in the YAML, %d decoded", len(elements), len(spec.Volumes))
	}
	facts := factsOf(&spec)
	results := make([]VolumeResult, 0, len(elements))
	for i, element := range elements {
		r, attrs := facts.plan(&spec.Volumes[i], want)
		if r.Converted {
			source, err := csiVolumeSource(attrs)
			if err != nil {
				return nil, err
			}
			replaceField(element, "configMap", "csi", source)
		}
		results = append(results, r)
	}
	return results, nil
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
