package cache

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

func configMapVolume(pod *corev1.Pod, name, configMap string) DesiredVolume {
	return DesiredVolume{
		Key: VolumeKey{PodUID: pod.UID, Volume: name}, Request: &Request{Namespace: pod.Namespace, Subject: pod}, Dir: "/d/" + name,
		Spec: podrefs.KeptVolume{Name: name, Plugin: podrefs.PluginConfigMap, ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}},
	}
}

func sorted(keys []VolumeKey) string {
	s := make([]string, 0, len(keys))
	for _, k := range keys {
		s = append(s, k.String())
	}
	slices.Sort(s)
	return fmt.Sprint(s)
}

// A pod's volumes are replaced and deleted together, and the reconciler's
// view (Get, VolumesReading) follows; each call returns every key whose
// desire may have changed.
func TestDesiredStateReplacesAPodsVolumes(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u"}}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q", UID: "w"}}
	s := NewDesiredState()
	if got := sorted(s.SetPodVolumes("u", []DesiredVolume{configMapVolume(pod, "a", "cm"), configMapVolume(pod, "b", "cm")}, nil)); got != "[u/a u/b]" {
		t.Errorf("first set touched %s, want [u/a u/b]", got)
	}
	s.SetPodVolumes("w", []DesiredVolume{configMapVolume(other, "c", "cm")}, nil)
	if got := sorted(s.VolumesReading(model.ConfigMap, "ns", "cm")); got != "[u/a u/b w/c]" {
		t.Errorf("VolumesReading: %s, want all three", got)
	}
	// The pod's new version drops b: a, b (before) and a (now).
	if got := sorted(s.SetPodVolumes("u", []DesiredVolume{configMapVolume(pod, "a", "cm")}, nil)); got != "[u/a u/a u/b]" {
		t.Errorf("second set touched %s", got)
	}
	if _, ok := s.Get(VolumeKey{"u", "b"}); ok {
		t.Error("b is still desired after its pod dropped it")
	}
	if got := s.PodVolumes("u"); len(got) != 1 || got[0].Key != (VolumeKey{"u", "a"}) {
		t.Errorf("PodVolumes(u): %+v, want u/a alone", got)
	}
	if got := sorted(s.DeletePod("u")); got != "[u/a]" {
		t.Errorf("DeletePod touched %s, want [u/a]", got)
	}
	if v, ok := s.Get(VolumeKey{"w", "c"}); !ok || v.Dir != "/d/c" {
		t.Errorf("the other pod's volume: %+v, %v", v, ok)
	}
	if pods := s.PodUIDs(); pods.Len() != 1 || !pods.Has("w") {
		t.Errorf("PodUIDs %v, want [w]", pods)
	}
	if got := s.VolumesReading(model.ConfigMap, "ns", "other-cm"); len(got) != 0 {
		t.Errorf("VolumesReading of an unread ConfigMap: %v", got)
	}
}

// Kept volumes (found on disk, pod not synced) are never set up: a
// ConfigMap change does not reach them.
func TestKeptVolumesReadNothing(t *testing.T) {
	s := NewDesiredState()
	s.SetPodVolumes("u", []DesiredVolume{{Key: VolumeKey{"u", "v"}, Spec: podrefs.KeptVolume{Name: "v", Plugin: podrefs.PluginConfigMap}}}, nil)
	if v, _ := s.Get(VolumeKey{"u", "v"}); !v.Keep() {
		t.Error("a volume with no pod is not kept")
	}
	if got := s.VolumesReading(model.ConfigMap, "", "cm"); len(got) != 0 {
		t.Errorf("VolumesReading found kept volumes: %v", got)
	}
}

// The objects' index follows a volume whose key stays while what it
// reads changes: a kept volume set up, a projected volume's sources
// replaced, a Secret beside a ConfigMap of the same name; and it forgets
// a deleted pod's volumes.
func TestVolumesReadingFollowsTheirSources(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u"}}
	s := NewDesiredState()
	kept := DesiredVolume{Key: VolumeKey{"u", "v"}, Spec: podrefs.KeptVolume{Name: "v", Plugin: podrefs.PluginConfigMap}}
	s.SetPodVolumes("u", []DesiredVolume{kept}, nil)
	s.SetPodVolumes("u", []DesiredVolume{configMapVolume(pod, "v", "cm")}, nil)
	if got := sorted(s.VolumesReading(model.ConfigMap, "ns", "cm")); got != "[u/v]" {
		t.Errorf("the kept volume set up: VolumesReading(cm) %s, want [u/v]", got)
	}
	projected := configMapVolume(pod, "v", "")
	projected.Spec.ConfigMap, projected.Spec.Plugin = nil, podrefs.PluginProjected
	projected.Spec.Projected = &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}}
	s.SetPodVolumes("u", []DesiredVolume{projected}, nil)
	for _, c := range []struct {
		kind model.Kind
		name string
		want string
	}{{model.ConfigMap, "cm", "[]"}, {model.ConfigMap, "other", "[u/v]"}, {model.Secret, "cm", "[u/v]"}} {
		if got := sorted(s.VolumesReading(c.kind, "ns", c.name)); got != c.want {
			t.Errorf("after its sources changed: VolumesReading(%s %s) %s, want %s", c.kind, c.name, got, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { s.VolumesReading(model.ConfigMap, "ns", "unread") }); n != 0 {
		t.Errorf("VolumesReading of an object no volume reads allocates %.0f times, want none", n)
	}
	s.DeletePod("u")
	if got := s.VolumesReading(model.Secret, "ns", "cm"); len(got) != 0 || len(s.byObject) != 0 {
		t.Errorf("after the pod's deletion: VolumesReading %v, index %v; want both empty", got, s.byObject)
	}
}

// A remount asked for while a volume is written survives the write's
// record; TakeRemount clears the flag and says it was set.
func TestActualStateRemountFlag(t *testing.T) {
	s := NewActualState()
	key := VolumeKey{"u", "v"}
	s.MarkRemountRequired(key) // not on disk: nothing to flag
	if s.Has(key) {
		t.Fatal("flagging a volume not on disk recorded it")
	}
	s.MarkMounted(MountedVolume{Key: key, Dir: "/d", ContentHash: "h1"})
	s.MarkRemountRequired(key)
	if !s.TakeRemount(key) || s.TakeRemount(key) {
		t.Error("TakeRemount did not take the flag once")
	}
	s.MarkRemountRequired(key) // during the remount
	s.MarkMounted(MountedVolume{Key: key, Dir: "/d", ContentHash: "h2"})
	if v, _ := s.Get(key); !v.RemountRequired || v.ContentHash != "h2" {
		t.Errorf("after the remount: %+v; want h2, still flagged", v)
	}
	if s.AddFound(MountedVolume{Key: key}) {
		t.Error("AddFound replaced a volume this process mounted")
	}
	if got := s.PodVolumes(types.UID("u")); fmt.Sprint(got) != "[v]" {
		t.Errorf("PodVolumes: %v", got)
	}
	s.MarkUnmounted(key)
	if s.Len() != 0 {
		t.Error("MarkUnmounted left the volume")
	}
}
