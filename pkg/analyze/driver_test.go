package analyze

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// Pods that use the driver: its load apart from the kubelet's (one watch
// per ConfigMap per node, immutable included, no GET), its delay within the
// reconciler's period, a failing volume counted apart; a cluster without
// such pods has no driver section.
func TestPredictDriver(t *testing.T) {
	driver := func(name string, optional bool) podrefs.DriverVolume {
		return podrefs.DriverVolume{Name: name, Reads: []podrefs.Ref{{Kind: model.ConfigMap, Name: name, Optional: optional}}}
	}
	withKubelet := podrefs.Refs{Volumes: []podrefs.Volume{cm("config")}}
	c := oneNode("v1.37.2", model.StrategyCache, time.Minute, time.Minute, withKubelet,
		podrefs.Refs{DriverVolumes: []podrefs.DriverVolume{driver("shared", false), driver("frozen", false), driver("later", true)}},
		podrefs.Refs{DriverVolumes: []podrefs.DriverVolume{driver("shared", false), driver("absent", false)}})
	c.Inventory.AddObject(model.ConfigMap, "ns", "shared", false)
	c.Inventory.AddObject(model.ConfigMap, "ns", "frozen", true)
	c.Inventory.Pods[1].Converted = true // the webhook converted the first driver pod
	without := Predict(oneNode("v1.37.2", model.StrategyCache, time.Minute, time.Minute, withKubelet), 10)
	r := Predict(c, 10)

	if without.Driver != nil {
		t.Errorf("a cluster without the driver's volumes has a driver section: %+v", without.Driver)
	}
	if r.Total.Predicted != without.Total.Predicted {
		t.Errorf("the driver's volumes changed the kubelets' load: %+v, want %+v", r.Total.Predicted, without.Total.Predicted)
	}
	d := r.Driver
	if d == nil {
		t.Fatal("no driver section")
	}
	// shared, frozen (immutable, watched all the same) and later (optional,
	// missing: its volume is empty and watched); absent fails.
	if d.Pods != 2 || d.ConvertedPods != 1 || d.Volumes != 5 || d.Failing != 1 || d.Nodes != 1 || d.Predicted.Sum().Watches != 3 || d.Predicted.Sum().APIServerGets != 0 {
		t.Errorf("driver %+v, want 2 pods (1 converted by the webhook), 5 volumes of which 1 failing, 1 node, 3 watches, no GET", *d)
	}
	if d.UpdateDelay == nil || d.UpdateDelay.Max >= 1 {
		t.Errorf("driver's delay %+v, want under a second", d.UpdateDelay)
	}
	if md := r.Markdown(10); !strings.Contains(md, "nodeagent's CSI driver") {
		t.Errorf("the report has no driver section:\n%s", md)
	}
}

// The driver's volumes have findings of their own: a required ConfigMap
// that is missing, and a subPath of an atomic volume, whose action is the
// inPlace layout; a subPath of an inPlace volume is none.
func TestDriverFindings(t *testing.T) {
	csi := func(name string, attrs map[string]string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: podrefs.DriverName, VolumeAttributes: attrs}}}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{
			{Name: "atomic", MountPath: "/etc/a", SubPath: "a"}, {Name: "inplace", MountPath: "/etc/b", SubPath: "b"}, {Name: "missing"}}}},
		Volumes: []corev1.Volume{
			csi("atomic", map[string]string{podrefs.AttrConfigMap: "cfg"}),
			csi("inplace", map[string]string{podrefs.AttrConfigMap: "cfg", podrefs.AttrUpdates: podrefs.UpdatesInPlace}),
			csi("missing", map[string]string{podrefs.AttrConfigMap: "absent"}),
		},
	}}
	c := oneNode("v1.37.2", model.StrategyWatch, time.Minute, 0, podrefs.Of(pod))
	c.Inventory.AddObject(model.ConfigMap, "ns", "cfg", false)
	var got []string
	for _, f := range c.findings() {
		got = append(got, string(f.Type)+" "+f.Object.Name+": "+f.Action)
	}
	want := []string{
		string(Missing) + " absent: create it, or mark the reference optional",
		string(SubPathNeverUpdated) + " cfg: set updates: inPlace on the CSI volume (docs/csi.md), or mount it without subPath",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("findings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A driver volume that keeps its pod from starting is a finding and counts
// as failing: one whose attributes the driver refuses, and each of a pod
// that waits for its volumes (no driver on the node, a publish that fails).
// A pod that started is neither.
func TestBrokenDriverVolumesAreFindings(t *testing.T) {
	csi := func(name string, attrs map[string]string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: podrefs.DriverName, VolumeAttributes: attrs}}}
	}
	pod := func(name string, status corev1.PodStatus, volumes ...corev1.Volume) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PodSpec{NodeName: "node", Volumes: volumes,
			Containers: []corev1.Container{{Name: "app"}}}, Status: status}
		for _, v := range volumes {
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: "/" + v.Name})
		}
		return p
	}
	waiting := corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse}}}
	running := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue}}}
	c := oneNode("v1.37.2", model.StrategyWatch, time.Minute, 0)
	c.Inventory.AddObject(model.ConfigMap, "ns", "cfg", false)
	for _, p := range []*corev1.Pod{
		pod("refused", waiting, csi("bad", map[string]string{podrefs.AttrConfigMap: "cfg", "namespace": "other"})),
		pod("no-driver", waiting, csi("good", map[string]string{podrefs.AttrConfigMap: "cfg"})),
		pod("started", running, csi("good", map[string]string{podrefs.AttrConfigMap: "cfg"})),
	} {
		c.Inventory.Pods = append(c.Inventory.Pods, inventory.PodInfoOf(p))
	}
	var got []string
	for _, f := range c.findings() {
		if f.Type == DriverVolumeFailing {
			got = append(got, f.Pod+" "+f.Object.Name)
		}
	}
	if want := []string{"ns/no-driver cfg", "ns/refused cfg"}; !slices.Equal(got, want) {
		t.Errorf("driverVolumeFailing findings %q, want %q", got, want)
	}
	if d := Predict(c, 10).Driver; d == nil || d.Pods != 3 || d.Volumes != 3 || d.Failing != 2 {
		t.Errorf("driver %+v, want 3 pods, 3 volumes, 2 failing", d)
	}

	// The CSINodes say no driver is registered on the node (uninstalled,
	// or its pod gone): the started pod's volume fails too, gets no update
	// and holds no watch.
	c.Inventory.DriverNodesListed, c.Inventory.DriverNodes = true, map[string]bool{"elsewhere": true}
	got = nil
	for _, f := range c.findings() {
		if f.Type == DriverVolumeFailing {
			got = append(got, f.Pod+" "+f.Object.Name)
		}
	}
	if want := []string{"ns/no-driver cfg", "ns/refused cfg", "ns/started cfg"}; !slices.Equal(got, want) {
		t.Errorf("with no driver on the node: findings %q, want %q", got, want)
	}
	if d := Predict(c, 10).Driver; d == nil || d.Failing != 3 || d.Predicted.Sum().Watches != 0 || d.UpdateDelay != nil {
		t.Errorf("with no driver on the node: %+v, want 3 failing, no watch, no update delay", d)
	}
}
