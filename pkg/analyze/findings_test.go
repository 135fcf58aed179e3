package analyze

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// findingsWorld builds a cluster from pods and objects as inventory.List reads them.
type findingsWorld struct {
	inv      *inventory.Inventory
	settings map[string]Settings
}

func newFindingsWorld() *findingsWorld {
	return &findingsWorld{inv: &inventory.Inventory{SecretsListed: true}, settings: map[string]Settings{}}
}

func (w *findingsWorld) node(name string, strategy model.Strategy) {
	w.inv.Nodes = append(w.inv.Nodes, inventory.NodeInfo{Name: name, KubeletVersion: "v1.36.3", TTL: 15 * time.Second})
	w.settings[name] = Settings{KubeletVersion: "v1.36.3", Version: version.MustParseGeneric("1.36.3"), Strategy: strategy,
		SyncFrequency: time.Minute, TTL: 15 * time.Second, Source: FromConfigz}
}

// configMap adds a ConfigMap created at created and last changed at
// changed (no managedFields where changed is zero).
func (w *findingsWorld) configMap(name string, immutable bool, created, changed time.Time, keys ...string) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(created)},
		Immutable: &immutable, Data: map[string]string{}}
	if !changed.IsZero() {
		cm.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Time: &metav1.Time{Time: created}}, {Manager: "kubectl", Time: &metav1.Time{Time: changed}}}
	}
	for _, k := range keys {
		cm.Data[k] = "v"
	}
	w.inv.AddObjectInfo(model.ConfigMap, "ns", name, inventory.ConfigMapInfo(cm))
}

// pod adds a running pod whose one container started at started.
func (w *findingsWorld) pod(name, node string, started time.Time, c corev1.Container, volumes ...corev1.Volume) {
	c.Name = "app"
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{c}, Volumes: volumes},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if !started.IsZero() {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}
	}
	w.inv.Pods = append(w.inv.Pods, inventory.PodInfoOf(p))
}

// found lists the findings as "type pod/container object" lines, sorted.
func (w *findingsWorld) found() []string {
	var out []string
	for _, f := range (Cluster{Inventory: w.inv, Settings: w.settings}).findings() {
		out = append(out, fmt.Sprintf("%s %s/%s %s", f.Type, f.Pod, f.Container, f.Object.Name))
	}
	sort.Strings(out)
	return out
}

func cmVolume(name, configMap string, optional bool, keys ...string) corev1.Volume {
	v := corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: configMap}, Optional: &optional}}}
	for _, k := range keys {
		v.ConfigMap.Items = append(v.ConfigMap.Items, corev1.KeyToPath{Key: k, Path: k})
	}
	return v
}

func mount(volume, subPath string) corev1.Container {
	return corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: volume, MountPath: "/etc/cfg", SubPath: subPath}}}
}

func envFrom(configMap string, optional bool) corev1.Container {
	return corev1.Container{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: configMap}, Optional: &optional}}}}
}

var (
	t0 = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
	t2 = t1.Add(time.Hour)
)

// Each finding where it applies, and none where it must not be one.
func TestFindings(t *testing.T) {
	for _, tt := range []struct {
		name  string
		build func(w *findingsWorld)
		want  []string
	}{
		{"subPath of an object changed after the start", func(w *findingsWorld) {
			w.configMap("cfg", false, t0, t2, "app.yaml")
			w.pod("web", "n1", t1, mount("v", "app.yaml"), cmVolume("v", "cfg", false))
		}, []string{"staleSinceStart ns/web/app cfg", "subPathNeverUpdated ns/web/app cfg"}},
		{"subPath of an object unchanged since the start", func(w *findingsWorld) {
			w.configMap("cfg", false, t0, t0, "app.yaml")
			w.pod("web", "n1", t1, mount("v", "app.yaml"), cmVolume("v", "cfg", false))
		}, []string{"subPathNeverUpdated ns/web/app cfg"}},
		{"a whole volume of an object that changed updates: no finding", func(w *findingsWorld) {
			w.configMap("cfg", false, t0, t2)
			w.pod("web", "n1", t1, mount("v", ""), cmVolume("v", "cfg", false))
		}, nil},
		{"env of a mutable object changed after the start", func(w *findingsWorld) {
			w.configMap("env", false, t0, t2)
			w.pod("web", "n1", t1, envFrom("env", false))
		}, []string{"envNeverUpdated ns/web/app env", "staleSinceStart ns/web/app env"}},
		{"env of an immutable object: no finding", func(w *findingsWorld) {
			w.configMap("env", true, t0, t0)
			w.pod("web", "n1", t1, envFrom("env", false))
		}, nil},
		{"created after the start, creation time only", func(w *findingsWorld) {
			w.configMap("env", false, t2, time.Time{})
			w.pod("web", "n1", t1, envFrom("env", false))
		}, []string{"envNeverUpdated ns/web/app env", "staleSinceStart ns/web/app env"}},
		{"immutable, recreated after a running pod on a Watch node started", func(w *findingsWorld) {
			w.node("n1", model.StrategyWatch)
			w.node("n2", model.StrategyWatch)
			w.configMap("frozen", true, t1, t1)
			w.pod("old", "n1", t0, mount("v", ""), cmVolume("v", "frozen", false))
			w.pod("new", "n1", t2, mount("v", ""), cmVolume("v", "frozen", false))
			w.pod("elsewhere", "n2", t2, mount("v", ""), cmVolume("v", "frozen", false))
		}, []string{"immutableRecreated ns/new/ frozen", "immutableRecreated ns/old/ frozen"}},
		{"immutable, recreated, on a Cache node: refreshed per TTL, no finding", func(w *findingsWorld) {
			w.node("n1", model.StrategyCache)
			w.configMap("frozen", true, t1, t1)
			w.pod("old", "n1", t0, mount("v", ""), cmVolume("v", "frozen", false))
		}, nil},
		{"immutable, recreated before every pod that uses it: no finding", func(w *findingsWorld) {
			w.node("n1", model.StrategyWatch)
			w.configMap("frozen", true, t0, t0)
			w.pod("web", "n1", t1, mount("v", ""), cmVolume("v", "frozen", false))
		}, nil},
		{"a missing required object, by volume and by env", func(w *findingsWorld) {
			w.pod("vol", "n1", time.Time{}, mount("v", ""), cmVolume("v", "absent", false))
			w.pod("env", "n1", time.Time{}, envFrom("absent", false))
		}, []string{"missing ns/env/app absent", "missing ns/vol/ absent"}},
		{"a missing optional object: no finding", func(w *findingsWorld) {
			w.pod("vol", "n1", t1, mount("v", ""), cmVolume("v", "absent", true))
			w.pod("env", "n1", t1, envFrom("absent", true))
		}, nil},
		{"items name a key the object lacks", func(w *findingsWorld) {
			w.configMap("cfg", false, t0, t0, "a")
			w.pod("web", "n1", t1, mount("v", ""), cmVolume("v", "cfg", false, "a", "b"))
			w.pod("optional", "n1", t1, mount("v", ""), cmVolume("v", "cfg", true, "b"))
		}, []string{"missingKey ns/web/ cfg"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newFindingsWorld()
			w.node("n1", model.StrategyWatch)
			tt.build(w)
			if got := w.found(); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// A Secret analyze may not list is never stale, missing or missing a key;
// its env use is still one that never updates.
func TestFindingsWithoutSecrets(t *testing.T) {
	w := newFindingsWorld()
	w.node("n1", model.StrategyWatch)
	w.inv.SecretsListed = false
	optional := false
	c := corev1.Container{EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Optional: &optional}}}}
	w.pod("web", "n1", t1, c)
	if got := w.found(); strings.Join(got, ",") != "envNeverUpdated ns/web/app db" {
		t.Errorf("findings %q, want only envNeverUpdated", got)
	}
}

// The detail says when only the creation time is known.
func TestStaleDetailSaysCreationTimeOnly(t *testing.T) {
	w := newFindingsWorld()
	w.node("n1", model.StrategyWatch)
	w.configMap("env", false, t2, time.Time{})
	w.pod("web", "n1", t1, envFrom("env", false))
	for _, f := range (Cluster{Inventory: w.inv, Settings: w.settings}).findings() {
		if f.Type == StaleSinceStart && !strings.Contains(f.Detail, "created (its only recorded time") {
			t.Errorf("detail %q does not say only the creation time is known", f.Detail)
		}
	}
}

// In a namespace labelled for the webhook, a configMap volume the kubelet
// still serves is notConverted; not in another namespace, not for a pod
// that opted out, and not for a volume already the driver's.
func TestNotConverted(t *testing.T) {
	w := newFindingsWorld()
	w.node("n1", model.StrategyWatch)
	w.configMap("cfg", false, t0, time.Time{})
	w.pod("old", "n1", t1, mount("conf", ""), cmVolume("conf", "cfg", false))
	w.inv.OptedIn, w.inv.NamespacesListed = map[string]bool{"ns": true}, true
	if got := strings.Join(w.found(), ","); got != "notConverted ns/old/ cfg" {
		t.Errorf("findings %q, want notConverted for the pod's volume", got)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "out", Annotations: map[string]string{"configmaps.nodeagent.io/serve": "disabled"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app"}}, Volumes: []corev1.Volume{cmVolume("conf", "cfg", false)}}}
	w.inv.Pods = []inventory.PodInfo{inventory.PodInfoOf(p)}
	if got := w.found(); len(got) != 0 {
		t.Errorf("a pod that opted out: %q", got)
	}
	w.inv.OptedIn = map[string]bool{"other": true}
	w.pod("old", "n1", t1, mount("conf", ""), cmVolume("conf", "cfg", false))
	if got := w.found(); len(got) != 0 {
		t.Errorf("a namespace that did not opt in: %q", got)
	}
}

// Every finding type says what it means in the summary.
func TestEveryFindingTypeHasAMeaning(t *testing.T) {
	for _, ft := range FindingTypes {
		if findingMeanings[ft] == "" {
			t.Errorf("%s has no meaning in the summary", ft)
		}
	}
}

// findings are c's findings, as Predict reports them.
func (c Cluster) findings() []Finding { return Predict(c, 10).Findings }
