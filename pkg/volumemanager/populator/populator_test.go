package populator

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
)

type flagged []cache.VolumeKey

func (f *flagged) MarkRemountRequired(keys ...cache.VolumeKey) { *f = append(*f, keys...) }

type fixture struct {
	p       *Populator
	desired *cache.DesiredState
	flagged flagged
	handed  []string
}

func newFixture() *fixture {
	f := &fixture{desired: cache.NewDesiredState()}
	f.p = New(Options{RootDir: "/root", Desired: f.desired, Actual: &f.flagged, HandOver: func(keys ...cache.VolumeKey) {
		for _, k := range keys {
			f.handed = append(f.handed, k.String())
		}
	}, Request: func(pod *corev1.Pod, _ podrefs.KeptVolume) *cache.Request {
		return &cache.Request{Namespace: pod.Namespace, Subject: pod}
	}})
	return f
}

// takeHanded returns the keys handed to the reconciler since the last call.
func (f *fixture) takeHanded() string {
	slices.Sort(f.handed)
	s := fmt.Sprint(f.handed)
	f.handed = nil
	return s
}

func pod(uid string, volumes ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: uid, UID: types.UID(uid)}}
	c := corev1.Container{Name: "c"}
	for _, v := range volumes {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: v, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: v, MountPath: "/" + v})
	}
	p.Spec.Containers = []corev1.Container{c}
	return p
}

// Each pass looks only at what changed since the last: the pods marked and
// the pods that left; a pod that left is dropped only once the source has
// synced; a marked pod's volumes on disk are flagged for a remount.
func TestPassesFollowChanges(t *testing.T) {
	f := newFixture()
	a, b := pod("a", "v"), pod("b", "v", "w")
	f.p.PodActive(a.UID)
	f.p.PodActive(b.UID)
	f.p.MarkPod(a)
	f.p.MarkPod(b)
	f.p.Pass()
	if got := f.takeHanded(); got != "[a/v b/v b/w]" {
		t.Errorf("first pass handed %s", got)
	}
	if v, ok := f.desired.Get(cache.VolumeKey{PodUID: "b", Volume: "w"}); !ok || v.Dir != "/root/pods/b/volumes/kubernetes.io~configmap/w" {
		t.Errorf("b/w desired: %+v, %v", v, ok)
	}
	f.p.Pass()
	if got := f.takeHanded(); got != "[]" {
		t.Errorf("a pass with nothing changed handed %s", got)
	}

	// Before the source has synced, a pod that leaves keeps its volumes.
	f.p.PodInactive(a.UID)
	f.p.Pass()
	if !f.desired.PodUIDs().Has(a.UID) {
		t.Fatal("a pod was dropped before the pod source synced")
	}
	// The synced source's first pass drops every desired pod not active.
	f.p.PodsSynced()
	f.p.Pass()
	if got := f.takeHanded(); got != "[a/v]" || f.desired.PodUIDs().Has(a.UID) {
		t.Errorf("after the sync handed %s; a desired %v", got, f.desired.PodUIDs().Has(a.UID))
	}
	// From then on, each pod that leaves is dropped at the next pass.
	f.p.PodInactive(b.UID)
	if f.p.Backlog() != 1 {
		t.Errorf("backlog %d, want 1", f.p.Backlog())
	}
	f.p.Pass()
	if got := f.takeHanded(); got != "[b/v b/w]" {
		t.Errorf("after b left: handed %s", got)
	}
	// A sync that races with its pod's deletion sets nothing up.
	f.p.MarkPod(b)
	f.p.Pass()
	if f.desired.PodUIDs().Has(b.UID) {
		t.Error("the sync of a pod no longer active made it desired again")
	}
	slices.SortFunc(f.flagged, func(x, y cache.VolumeKey) int { return strings.Compare(x.String(), y.String()) })
	if got := fmt.Sprint(f.flagged); got != "[a/v b/v b/w]" {
		t.Errorf("flagged for remount: %s, want each volume of the first pass once", got)
	}
}

// Volumes found on disk are kept until their pod's first sync adopts them,
// and those the pod no longer has go.
func TestKeptVolumesAreAdoptedByTheFirstSync(t *testing.T) {
	f := newFixture()
	f.p.Keep([]cache.MountedVolume{{Key: cache.VolumeKey{PodUID: "a", Volume: "v"}, Dir: "/d/a/v"}, {Key: cache.VolumeKey{PodUID: "a", Volume: "old"}, Dir: "/d/a/old"}})
	if v, ok := f.desired.Get(cache.VolumeKey{PodUID: "a", Volume: "v"}); !ok || !v.Keep() {
		t.Fatalf("a found volume: %+v, %v; want kept", v, ok)
	}
	f.takeHanded()
	f.p.PodActive("a")
	f.p.MarkPod(pod("a", "v"))
	f.p.Pass()
	if got := f.takeHanded(); got != "[a/old a/v a/v]" {
		t.Errorf("the first sync handed %s", got)
	}
	if v, _ := f.desired.Get(cache.VolumeKey{PodUID: "a", Volume: "v"}); v.Keep() {
		t.Error("the first sync did not adopt the found volume")
	}
	if _, ok := f.desired.Get(cache.VolumeKey{PodUID: "a", Volume: "old"}); ok {
		t.Error("a found volume the pod no longer has is still desired")
	}
}

// A pod whose directory is claimed for removal is set up only after the
// claim ends, even if it becomes active meanwhile; an active pod, a pod in
// use, and any pod before the source has synced are never claimed.
func TestClaimedPodsWaitForRelease(t *testing.T) {
	f := newFixture()
	none := func() sets.Set[types.UID] { return sets.New[types.UID]() }
	if got := f.p.ClaimInactive([]types.UID{"gone"}, none); len(got) != 0 {
		t.Fatalf("claimed %v before the source synced", got)
	}
	f.p.PodActive("active")
	f.p.PodsSynced()
	got := f.p.ClaimInactive([]types.UID{"active", "busy", "late"}, func() sets.Set[types.UID] { return sets.New[types.UID]("busy") })
	if !slices.Equal(got, []types.UID{"late"}) {
		t.Fatalf("claimed %v, want [late]", got)
	}
	late := pod("late", "v")
	f.p.PodActive(late.UID)
	f.p.MarkPod(late)
	f.p.Pass()
	if got := f.takeHanded(); got != "[]" {
		t.Errorf("a claimed pod's volumes were handed over: %s", got)
	}
	f.p.Release([]types.UID{"late"})
	f.p.Pass()
	if got := f.takeHanded(); got != "[late/v]" {
		t.Errorf("after the release: handed %s, want [late/v]", got)
	}
}
