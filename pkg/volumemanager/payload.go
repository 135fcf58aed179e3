package volumemanager

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
)

// pluginDir is the kubelet's directory name for ConfigMap volumes.
const pluginDir = "kubernetes.io~configmap"

// defaultMode is what the API defaults ConfigMapVolumeSource.DefaultMode to;
// objects that skipped defaulting (fake clients) get the same here.
const defaultMode int32 = 0o644

// volumeDir is where a pod's ConfigMap volume lives under the root dir.
func volumeDir(rootDir, podUID, volumeName string) string {
	return filepath.Join(rootDir, "pods", podUID, "volumes", pluginDir, volumeName)
}

// ConfigMapVolumes returns the pod's ConfigMap volumes that at least one
// container or init container mounts, by volume name. A volume that nothing
// mounts is never set up, as in the kubelet.
func ConfigMapVolumes(pod *corev1.Pod) map[string]*corev1.ConfigMapVolumeSource {
	mounted := map[string]bool{}
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range containers {
			for _, m := range c.VolumeMounts {
				mounted[m.Name] = true
			}
		}
	}
	volumes := map[string]*corev1.ConfigMapVolumeSource{}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.ConfigMap != nil && mounted[v.Name] {
			volumes[v.Name] = v.ConfigMap
		}
	}
	return volumes
}

func isOptional(source *corev1.ConfigMapVolumeSource) bool {
	return source.Optional != nil && *source.Optional
}

// Payload computes the files of a ConfigMap volume (SPEC §4). Without items,
// every key of data and binaryData becomes a file named after it, with the
// default mode. With items, only the listed keys, each at its path with its
// own mode or the default; of two items with one path the later wins; a
// listed key missing from the ConfigMap is an error unless the volume is
// optional, in which case it is skipped.
func Payload(source *corev1.ConfigMapVolumeSource, cm *corev1.ConfigMap) (map[string]atomicwriter.FileProjection, error) {
	mode := defaultMode
	if source.DefaultMode != nil {
		mode = *source.DefaultMode
	}
	payload := map[string]atomicwriter.FileProjection{}
	if len(source.Items) == 0 {
		for key, value := range cm.Data {
			payload[key] = atomicwriter.FileProjection{Data: []byte(value), Mode: mode}
		}
		for key, value := range cm.BinaryData {
			payload[key] = atomicwriter.FileProjection{Data: value, Mode: mode}
		}
		return payload, nil
	}
	for _, item := range source.Items {
		var data []byte
		if value, ok := cm.Data[item.Key]; ok {
			data = []byte(value)
		} else if value, ok := cm.BinaryData[item.Key]; ok {
			data = value
		} else if isOptional(source) {
			continue
		} else {
			return nil, fmt.Errorf("configmap %q has no key %q (listed in items for path %q)", cm.Name, item.Key, item.Path)
		}
		itemMode := mode
		if item.Mode != nil {
			itemMode = *item.Mode
		}
		payload[item.Path] = atomicwriter.FileProjection{Data: data, Mode: itemMode}
	}
	return payload, nil
}

// contentHash is a short digest of a payload's paths and bytes, shown by
// /debug/volumes so that two nodes' copies can be compared at a glance.
func contentHash(files map[string][]byte) string {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	h := sha256.New()
	for _, p := range paths {
		fmt.Fprintf(h, "%d:%s%d:", len(p), p, len(files[p]))
		h.Write(files[p])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func payloadBytes(payload map[string]atomicwriter.FileProjection) map[string][]byte {
	files := make(map[string][]byte, len(payload))
	for p, f := range payload {
		files[filepath.Clean(p)] = f.Data
	}
	return files
}
