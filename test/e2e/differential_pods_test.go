//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/internal/volumetree"
)

// createDifferentialConfigMaps makes the differential test's ConfigMaps;
// diff-missing is left out on purpose.
func createDifferentialConfigMaps(t *testing.T, ns string) {
	t.Helper()
	blob := make([]byte, 256)
	for i := range blob {
		blob[i] = byte(i)
	}
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "diff-items"}, Data: map[string]string{"a": "alpha\n", "b": "beta", "c": "not projected"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "diff-binary"}, Data: map[string]string{"text": "plain"}, BinaryData: map[string][]byte{"blob": blob}},
		{ObjectMeta: metav1.ObjectMeta{Name: "diff-shared"}, Data: map[string]string{"greeting": "hello", "farewell": "bye"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "diff-env"}, Data: map[string]string{"LEVEL": "debug", "MODE": "fast"}},
	} {
		if _, err := clientset.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// differentialReaders is how many of differentialPods mount each
// ConfigMap that exists.
var differentialReaders = map[string]int{
	"diff-items":  2, // items, nested
	"diff-binary": 1, // binary, in two volumes
	"diff-shared": 4, // optional, shared-a, shared-b, nested
}

// differentialPods are the pods each node of the differential test runs,
// named <base>-<node>. Every pod keeps the service-account volume.
func differentialPods(ns, node string) []*corev1.Pod {
	mode := func(m int32) *int32 { return &m }
	uid := func(u int64) *int64 { return &u }
	optional := true
	cmVolume := func(name, configMap string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}
	}
	pod := func(base string, volumes []corev1.Volume, mounts []corev1.VolumeMount) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: base + "-" + node, Labels: map[string]string{"app": base}},
			Spec: corev1.PodSpec{
				NodeName:   node,
				Volumes:    volumes,
				Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", VolumeMounts: mounts}},
			},
		}
	}
	mount := func(name, path string) corev1.VolumeMount { return corev1.VolumeMount{Name: name, MountPath: path} }

	// The owner fields (KEP-5936) on two volumes: a file's owner is its
	// item's user, else the volume's defaultUser, where the gate is on.
	items := cmVolume("items", "diff-items")
	items.ConfigMap.DefaultMode = mode(0o440)
	items.ConfigMap.DefaultUser = uid(diffDefaultUser)
	items.ConfigMap.Items = []corev1.KeyToPath{{Key: "a", Path: "dir/sub/a.txt", Mode: mode(0o600), User: uid(diffItemUser)}, {Key: "b", Path: "b"}}

	projected := corev1.Volume{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: mode(0o444), DefaultUser: uid(diffDefaultUser),
		Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "diff-binary"}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "meta/labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				{Path: "meta/namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
				// An item's user on a top-level file: the kubelet owns a
				// directory's symlink as any one of its files, at random.
				{Path: "cpu-limit", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu", Divisor: resource.MustParse("1m")},
					User: uid(diffItemUser)},
			}}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "diff-missing"}, Optional: &optional}},
		},
	}}}
	missing := cmVolume("missing", "diff-missing")
	missing.ConfigMap.Optional = &optional

	binaryPod := pod("binary", []corev1.Volume{cmVolume("binary", "diff-binary"), projected},
		[]corev1.VolumeMount{mount("binary", "/etc/binary"), mount("projected", "/etc/projected")})
	binaryPod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}

	envPod := pod("env", nil, nil)
	envPod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "LEVEL", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "diff-env"}, Key: "LEVEL"}}}}
	envPod.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "diff-env"}}}}

	return []*corev1.Pod{
		pod("items", []corev1.Volume{items}, []corev1.VolumeMount{mount("items", "/etc/items")}),
		binaryPod,
		pod("optional", []corev1.Volume{missing, cmVolume("shared", "diff-shared")},
			[]corev1.VolumeMount{mount("missing", "/etc/missing"), mount("shared", "/etc/shared")}),
		pod("shared-a", []corev1.Volume{cmVolume("shared", "diff-shared")}, []corev1.VolumeMount{mount("shared", "/etc/shared")}),
		pod("shared-b", []corev1.Volume{cmVolume("shared", "diff-shared")}, []corev1.VolumeMount{mount("shared", "/etc/shared")}),
		// A volume mounted inside another: the outer gets a mount point.
		pod("nested", []corev1.Volume{cmVolume("outer", "diff-shared"), cmVolume("inner", "diff-items")},
			[]corev1.VolumeMount{mount("outer", "/etc/outer"), mount("inner", "/etc/outer/inner")}),
		envPod,
	}
}

// removeConfigMapKey deletes one key of a ConfigMap's data.
func removeConfigMapKey(t *testing.T, ns, name, key string) {
	t.Helper()
	cm, err := clientset.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(cm.Data, key)
	if _, err := clientset.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// checkOwners holds the kubelet's volumes of a pair to the owners their
// volumes ask for: the items' user or the defaultUser with the gate on,
// root without it. The trees compared equal, so nodeagent's are the same;
// this says the comparison was of owners that differ.
func checkOwners(t *testing.T, p differentialPair, rootDir string, pods map[string]*corev1.Pod) {
	t.Helper()
	want := map[string]map[string]int{
		"kubernetes.io~configmap/items": {"..data/dir/sub/a.txt": diffItemUser, "dir": diffItemUser, "..data/b": diffDefaultUser, "b": diffDefaultUser},
		"kubernetes.io~projected/projected": {"..data/cpu-limit": diffItemUser, "cpu-limit": diffItemUser, "..data/meta/labels": diffDefaultUser,
			"meta": diffDefaultUser, "..data/text": diffDefaultUser},
	}
	pod := map[string]*corev1.Pod{"kubernetes.io~configmap/items": pods["items"], "kubernetes.io~projected/projected": pods["binary"]}
	for key, files := range want {
		dir := volumeDirs(rootDir, pod[key])[key]
		if dir == "" {
			t.Errorf("%s: no volume %s", p.name, key)
			continue
		}
		tree := fileTree(t, dir)
		for path, uid := range files {
			// The files are in the generation ..data points at.
			path = strings.Replace(path, "..data/", volumetree.Generation+"/", 1)
			if !p.owners {
				uid = 0
			}
			if e, ok := tree[path]; !ok || e.UID != uid {
				t.Errorf("%s, volume %s: %s is %v, want owner %d", p.name, key, path, e, uid)
			}
		}
	}
}
