package volumemanager

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/core"
)

// serviceAccountPod is a pod as the ServiceAccount admission plugin leaves
// it: a kube-api-access volume with a token, the namespace's root CA and the
// namespace, mounted by the one container.
func serviceAccountPod(uid string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-" + uid, UID: types.UID(uid)},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				DefaultMode: ptr.To[int32](0o644),
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
					{ConfigMap: &corev1.ConfigMapProjection{
						LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
						Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
					}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
						Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
					}}}},
				},
			}}}},
			Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{
				Name: "kube-api-access-x7k2p", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true,
			}}}},
		},
	}
}

func projectedDir(h *harness, pod *corev1.Pod, volume string) string {
	return podrefs.VolumeDir(h.root, string(pod.UID), podrefs.PluginProjected, volume)
}

func TestServiceAccountVolume(t *testing.T) {
	h := newHarness(t)
	h.cms.set("kube-root-ca.crt", map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\n"})
	pod := serviceAccountPod("p")
	h.sync(pod)

	dir := projectedDir(h, pod, "kube-api-access-x7k2p")
	for file, want := range map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\n", "namespace": "ns"} {
		got, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil || string(got) != want {
			t.Errorf("%s: got %q, %v; want %q", file, got, err, want)
		}
		info, err := os.Stat(filepath.Join(dir, file))
		if err != nil || info.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, %v; want 0644", file, info.Mode().Perm(), err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "token")); !os.IsNotExist(err) {
		t.Errorf("token: %v; nodeagent does not mint tokens, want no file", err)
	}
	info, err := os.Stat(dir)
	if err != nil || info.Mode().Perm() != 0o777 {
		t.Errorf("volume directory mode %v, %v; want 0777 as the kubelet's emptyDir wrapper leaves it", info.Mode().Perm(), err)
	}
	vs := h.m.Volumes()
	want := core.VolumeStatus{
		PodUID: "p", Pod: "ns/pod-p", Volume: "kube-api-access-x7k2p", Plugin: podrefs.PluginProjected, ConfigMaps: []string{"kube-root-ca.crt"},
		Path: dir, State: core.StateMounted, ResourceVersion: "kube-root-ca.crt=1", NotServed: []string{"serviceAccountToken token"},
	}
	if len(vs) != 1 {
		t.Fatalf("Volumes(): got %+v", vs)
	}
	vs[0].ContentHash = ""
	if !reflect.DeepEqual(vs[0], want) {
		t.Errorf("Volumes():\n got %+v\nwant %+v", vs[0], want)
	}

	// Every sync remounts it, and a change of the root CA reaches disk.
	h.cms.set("kube-root-ca.crt", map[string]string{"ca.crt": "rotated"})
	h.sync(pod)
	if got, _ := os.ReadFile(filepath.Join(dir, "ca.crt")); string(got) != "rotated" {
		t.Errorf("after a sync: ca.crt %q, want the rotated CA", got)
	}
}

func TestProjectedSourcesFailTogether(t *testing.T) {
	h := newHarness(t)
	pod := serviceAccountPod("p")
	pod.Spec.Volumes[0].Projected.Sources = append(pod.Spec.Volumes[0].Projected.Sources,
		corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: "maybe"}, Optional: ptr.To(true),
		}},
		corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}})
	// kube-root-ca.crt is missing and not optional: the volume fails as a
	// whole, and the optional "maybe" and the secret do not matter.
	h.sync(pod)
	if _, err := os.Stat(projectedDir(h, pod, "kube-api-access-x7k2p")); !os.IsNotExist(err) {
		t.Fatalf("a failed first mount left %v", err)
	}
	checkFailure(t, h, `couldn't get configMap ns/kube-root-ca.crt`)
	vs := h.m.Volumes()
	if len(vs) != 1 || !reflect.DeepEqual(vs[0].NotServed, []string{"serviceAccountToken token", "secret s"}) {
		t.Errorf("Volumes() of a failing projected volume: %+v", vs)
	}

	h.cms.set("kube-root-ca.crt", map[string]string{"ca.crt": "ca"})
	h.stepToRetry("p", "kube-api-access-x7k2p")
	h.step()
	h.step()
	names, _ := filepath.Glob(filepath.Join(projectedDir(h, pod, "kube-api-access-x7k2p"), "[a-z]*"))
	if len(names) != 2 {
		t.Errorf("after the root CA appeared: files %v, want ca.crt and namespace", names)
	}
}

func TestDownwardAPIItems(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u-1",
			Labels:      map[string]string{"app": "web", "tier": "front\"end"},
			Annotations: map[string]string{"note": "a\nb"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		}}}},
	}
	allocatable := func() (corev1.ResourceList, error) {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")}, nil
	}
	field := func(path, fieldPath string) corev1.DownwardAPIVolumeFile {
		return corev1.DownwardAPIVolumeFile{Path: path, FieldRef: &corev1.ObjectFieldSelector{FieldPath: fieldPath}}
	}
	res := func(path, name, divisor string) corev1.DownwardAPIVolumeFile {
		f := corev1.DownwardAPIVolumeFile{Path: path, ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "c", Resource: name}}
		if divisor != "" {
			f.ResourceFieldRef.Divisor = resource.MustParse(divisor)
		}
		return f
	}
	items := []corev1.DownwardAPIVolumeFile{
		field("name", "metadata.name"), field("ns", "metadata.namespace"), field("uid", "metadata.uid"),
		field("labels", "metadata.labels"), field("annotations", "metadata.annotations"),
		field("app", "metadata.labels['app']"), field("sub/./note", "metadata.annotations['note']"),
		res("cpu-request", "requests.cpu", "1m"), res("cpu-limit", "limits.cpu", ""), res("mem-limit", "limits.memory", "1Mi"),
		{Path: "private", Mode: ptr.To[int32](0o400), FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
	}
	got, err := downwardAPIPayload(items, pod, allocatable, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"name": "web", "ns": "ns", "uid": "u-1",
		"labels": "app=\"web\"\ntier=\"front\\\"end\"", "annotations": "note=\"a\\nb\"",
		"app": "web", "sub/note": "a\nb",
		"cpu-request": "250", "cpu-limit": "2", "mem-limit": "128", "private": "web",
	}
	for path, data := range want {
		if string(got[path].Data) != data {
			t.Errorf("%s: got %q, want %q", path, got[path].Data, data)
		}
	}
	if len(got) != len(want) || got["private"].Mode != 0o400 || got["name"].Mode != 0o644 {
		t.Errorf("payload %v: want %d files, private 0400, others 0644", got, len(want))
	}

	_, err = downwardAPIPayload([]corev1.DownwardAPIVolumeFile{field("ip", "status.podIP")}, pod, allocatable, 0o644)
	if err == nil || !strings.Contains(err.Error(), `"status.podIP" is not supported`) {
		t.Errorf("status.podIP in a volume: got %v, want it refused as the kubelet refuses it", err)
	}
}

func TestVolumesTheKubeletSetsUp(t *testing.T) {
	withMount := func(pod *corev1.Pod, mount func(*corev1.Pod, corev1.VolumeMount)) *corev1.Pod {
		pod.Spec.Containers[0].VolumeMounts = nil
		mount(pod, corev1.VolumeMount{Name: "kube-api-access-x7k2p", MountPath: "/sa"})
		return pod
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want int
	}{
		{"regular container", serviceAccountPod("a"), 1},
		{"init container only", withMount(serviceAccountPod("b"), func(p *corev1.Pod, m corev1.VolumeMount) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", VolumeMounts: []corev1.VolumeMount{m}}}
		}), 1},
		{"ephemeral container only", withMount(serviceAccountPod("c"), func(p *corev1.Pod, m corev1.VolumeMount) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", VolumeMounts: []corev1.VolumeMount{m}}}}
		}), 1},
		{"no container", withMount(serviceAccountPod("d"), func(*corev1.Pod, corev1.VolumeMount) {}), 0},
		{"mirror pod", func() *corev1.Pod {
			p := serviceAccountPod("e")
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
			return p
		}(), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := len(podrefs.KeptVolumes(tt.pod)); got != tt.want {
				t.Errorf("KeptVolumes: got %d volumes, want %d", got, tt.want)
			}
		})
	}
}

func TestFSGroupOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's group to an arbitrary fsGroup needs root")
	}
	h := newHarness(t)
	h.cms.set("cfg", map[string]string{"a": "1"})
	pod := newPod("p", volumeSpec{name: "v", configMap: "cfg", items: []corev1.KeyToPath{{Key: "a", Path: "sub/a", Mode: ptr.To[int32](0o600)}}})
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](4321)}
	h.sync(pod)
	dir := podrefs.VolumeDir(h.root, "p", podrefs.PluginConfigMap, "v")
	check := func(path string, wantMode os.FileMode) {
		t.Helper()
		info, err := os.Stat(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		gid := info.Sys().(*syscall.Stat_t).Gid
		got := info.Mode() & (os.ModePerm | os.ModeSetgid)
		if gid != 4321 || got != wantMode {
			t.Errorf("%s: group %d, mode %v; want group 4321, mode %v", path, gid, got, wantMode)
		}
	}
	check(".", os.ModeSetgid|0o777)
	check("..data", os.ModeSetgid|0o755)
	check("sub", os.ModeSetgid|0o755)
	check("sub/a", 0o640) // 0600 | r for the group
	h.cms.set("cfg", map[string]string{"a": "2"})
	h.sync(pod)
	check("sub/a", 0o640) // a new generation gets it too
	h.sync(pod)
	check(".", os.ModeSetgid|0o777) // a remount that writes nothing keeps it
}

// v1.37's alpha defaultUser and user fields (gate AtomicWriteVolumeUserFields,
// off by default) are ignored, as by the kubelet with the gate off: the
// files stay the agent's.
func TestAlphaUserFieldsAreIgnored(t *testing.T) {
	h := newHarness(t)
	h.cms.set("cfg", map[string]string{"a": "1"})
	pod := newPod("p", volumeSpec{name: "v", configMap: "cfg", items: []corev1.KeyToPath{{Key: "a", Path: "a", User: ptr.To[int64](4322)}}})
	pod.Spec.Volumes[0].ConfigMap.DefaultUser = ptr.To[int64](4321)
	h.sync(pod)
	info, err := os.Stat(filepath.Join(podrefs.VolumeDir(h.root, "p", podrefs.PluginConfigMap, "v"), "a"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := info.Sys().(*syscall.Stat_t).Uid; int(uid) != os.Geteuid() {
		t.Errorf("file owned by %d, want the agent's %d", uid, os.Geteuid())
	}
}

// A container that mounts another volume inside this one gets its mount
// point made inside the volume, and no write removes it.
func TestNestedMountPointsSurviveWrites(t *testing.T) {
	h := newHarness(t)
	h.cms.set("cfg", map[string]string{"a": "1"})
	pod := newPod("p", volumeSpec{name: "v", configMap: "cfg"}) // mounted at /v
	pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts,
		corev1.VolumeMount{Name: "data", MountPath: "/v/cache"},
		corev1.VolumeMount{Name: "deeper", MountPath: "/v/cache/more"},
		corev1.VolumeMount{Name: "beside", MountPath: "/vx"})
	h.sync(pod)
	h.cms.set("cfg", map[string]string{"b": "2"})
	h.sync(pod)
	if got := h.visible(pod, "v"); !reflect.DeepEqual(got, []string{"b", "cache"}) {
		t.Errorf("visible entries %v, want [b cache]", got)
	}
	if info, err := os.Lstat(filepath.Join(podrefs.VolumeDir(h.root, "p", podrefs.PluginConfigMap, "v"), "cache")); err != nil || !info.IsDir() {
		t.Errorf("cache: %v, %v; want a real directory", info, err)
	}
}

func TestFailedRemountEmitsFailedMount(t *testing.T) {
	h := newHarness(t)
	h.cms.set("cfg", map[string]string{"a": "1"})
	pod := newPod("p", volumeSpec{name: "v", configMap: "cfg"})
	h.sync(pod)
	h.cms.remove("cfg")
	h.sync(pod)
	h.mustRead(pod, "v", "a", "1")
	h.events.mu.Lock()
	defer h.events.mu.Unlock()
	if len(h.events.events) != 1 || !strings.HasPrefix(h.events.events[0], `Warning FailedMount MountVolume.SetUp failed for volume "v"`) {
		t.Errorf("events %q, want one FailedMount for the remount", h.events.events)
	}
}

// blockingConfigMaps holds every read (of ConfigMap only, if set) until
// release is closed.
type blockingConfigMaps struct {
	*fakeConfigMaps
	reading chan struct{}
	release chan struct{}
	only    string
}

func (b *blockingConfigMaps) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	cm, err := b.fakeConfigMaps.GetConfigMap(ctx, namespace, name)
	if b.only != "" && name != b.only {
		return cm, err
	}
	b.reading <- struct{}{}
	<-b.release
	return cm, err
}

func TestChangeDuringFirstMountIsNotLost(t *testing.T) {
	h := newHarness(t)
	blocking := &blockingConfigMaps{fakeConfigMaps: h.cms, reading: make(chan struct{}, 10), release: make(chan struct{})}
	h.m = h.newManager(func(o *Options) { o.Core.ConfigMaps = blocking })
	h.cms.set("cfg", map[string]string{"a": "old"})
	pod := newPod("p", volumeSpec{name: "v", configMap: "cfg"})
	h.mark(pod)
	h.publish()
	h.m.populator.Pass()
	h.m.core.Reconciler().Pass(context.Background())
	<-blocking.reading // the first mount has read "old"
	h.cms.set("cfg", map[string]string{"a": "new"})
	h.m.RemountConfigMap("ns", "cfg")
	close(blocking.release)
	h.m.core.Reconciler().Wait()
	h.mustRead(pod, "v", "a", "old")
	h.step()
	h.mustRead(pod, "v", "a", "new")
}

func TestChangeEndsTheBackoffOfAFailingVolume(t *testing.T) {
	h := newHarness(t)
	pod := newPod("p", volumeSpec{name: "v", configMap: "cfg"})
	for range 5 { // a backoff of 8 s by now
		h.sync(pod)
		h.stepToRetry("p", "v")
	}
	h.sync(pod)
	h.cms.set("cfg", map[string]string{"a": "1"})
	h.step()
	if _, err := h.read(pod, "v", "a"); err == nil {
		t.Fatal("mounted while backing off; the test proves nothing")
	}
	h.m.RemountConfigMap("ns", "cfg")
	h.step()
	h.mustRead(pod, "v", "a", "1")
}
