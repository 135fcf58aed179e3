package analyze

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/utils/ptr"

	"github.com/nodeagent-io/nodeagent/pkg/convert"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// Each namespace's and each workload's row of move-to-driver is what the
// whole model says when that group alone moves: the kubelets' load that
// goes (Totals before and after) and the driver's that comes
// (driverResult before and after), on a random cluster of every kubelet
// behaviour, ConfigMaps shared between workloads on a node, immutable and
// missing ones, driver volumes already there, subPath mounts and pods that
// opt out.
func TestMoveGroupsAreTheModelsDifference(t *testing.T) {
	delays := 0
	for seed := range uint64(20) {
		c := randomMovableCluster(rand.New(rand.NewPCG(seed, 7)))
		w := whatIfNamed(t, Predict(c, 1000), "move-to-driver")
		if w.MovableWorkloads == 0 || len(w.Workloads) != w.MovableWorkloads || len(w.Namespaces) != w.MovableNamespaces {
			t.Fatalf("seed %d: %d of %d workloads, %d of %d namespaces", seed, len(w.Workloads), w.MovableWorkloads, len(w.Namespaces), w.MovableNamespaces)
		}
		// Every workload with a movable pod has its row, those of bare pods
		// (kept apart from the sums) included.
		movable := map[[2]string]bool{}
		for _, p := range c.Inventory.Pods {
			if len(p.Unconverted) > 0 {
				movable[[2]string{p.Namespace, p.Workload}] = true
			}
		}
		if len(movable) != w.MovableWorkloads {
			t.Fatalf("seed %d: %d movable workloads counted, the pods have %d", seed, w.MovableWorkloads, len(movable))
		}
		for _, g := range append(w.Namespaces, w.Workloads...) {
			saved, added := c.movingAlone(g.Namespace, g.Workload)
			if !closeRates(g.KubeletsSaved.Sum(), saved) || !closeRates(g.DriverAdded.Sum(), added) {
				t.Errorf("seed %d, %s %s: saved %+v, added %+v; the model says %+v and %+v",
					seed, g.Namespace, g.Workload, g.KubeletsSaved.Sum(), g.DriverAdded.Sum(), saved, added)
			}
			// Volumes that mount have a delay before and after; those
			// whose required ConfigMap is missing have none either way.
			if (g.UpdateDelay == nil) != (g.MovedUpdateDelay == nil) || g.MovedUpdateDelay != nil && g.MovedUpdateDelay.Max >= 1 {
				t.Errorf("seed %d, %s %s: delays %v now, %v moved; want both or neither, the driver's under a second",
					seed, g.Namespace, g.Workload, g.UpdateDelay, g.MovedUpdateDelay)
			}
			if g.UpdateDelay != nil {
				delays++
			}
		}
	}
	if delays == 0 {
		t.Error("no group had a delay")
	}
}

// A report's top rows of move-to-driver are the first of every row, for
// namespaces and workloads alike: a node keeps only its top bare pods'
// groups, and the cluster's top ones must be among them.
func TestMoveGroupsTopRowsAreTheFirstOfAll(t *testing.T) {
	for seed := range uint64(20) {
		c := randomMovableCluster(rand.New(rand.NewPCG(seed, 7)))
		all := whatIfNamed(t, Predict(c, 1000), "move-to-driver")
		for _, top := range []int{1, 3} {
			w := whatIfNamed(t, Predict(c, top), "move-to-driver")
			if w.MovableWorkloads != all.MovableWorkloads || w.MovableNamespaces != all.MovableNamespaces {
				t.Errorf("seed %d, top %d: %d workloads, %d namespaces; with every row %d and %d", seed, top,
					w.MovableWorkloads, w.MovableNamespaces, all.MovableWorkloads, all.MovableNamespaces)
			}
			if !reflect.DeepEqual(w.Workloads, all.Workloads[:min(top, len(all.Workloads))]) || !reflect.DeepEqual(w.Namespaces, all.Namespaces[:min(top, len(all.Namespaces))]) {
				t.Errorf("seed %d, top %d: rows\n%+v\n%+v\nare not the first of\n%+v\n%+v", seed, top, w.Workloads, w.Namespaces, all.Workloads, all.Namespaces)
			}
		}
	}
}

// movingAlone is the model's kubelet load saved and driver load added when
// only the pods of namespace (and workload, where not empty) move.
func (c Cluster) movingAlone(namespace, workload string) (saved, added Rates) {
	only := c
	inv := *c.Inventory
	inv.Pods = append([]inventory.PodInfo(nil), c.Inventory.Pods...)
	for i, p := range inv.Pods {
		if p.Namespace != namespace || workload != "" && p.Workload != workload {
			inv.Pods[i].Unconverted = nil
		}
	}
	only.Inventory = &inv
	moved, _ := only.movedToDriver()
	before, after := Predict(c, 1), Predict(moved, 1)
	driver := func(r Result) Rates {
		if r.Driver != nil {
			return r.Driver.Predicted.Sum()
		}
		return Rates{}
	}
	return before.Total.Predicted.Sum().minus(after.Total.Predicted.Sum()), driver(after).minus(driver(before))
}

// whatIfNamed is r's what-if name.
func whatIfNamed(t *testing.T, r Result, name string) WhatIf {
	t.Helper()
	for _, w := range r.WhatIfs {
		if w.Name == name {
			return w
		}
	}
	t.Fatalf("no what-if %s", name)
	return WhatIf{}
}

func closeRates(a, b Rates) bool {
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*max(1, math.Abs(y)) }
	return near(a.APIServerGets, b.APIServerGets) && near(a.EtcdReads, b.EtcdReads) && a.Watches == b.Watches &&
		near(a.WatchRequests, b.WatchRequests)
}

// randomMovableCluster is four nodes, one of each kubelet behaviour (one
// with T = 0), and pods of three namespaces' workloads reading six
// ConfigMaps each.
func randomMovableCluster(r *rand.Rand) Cluster {
	inv := &inventory.Inventory{SecretsListed: true, NamespacesListed: true, OptedIn: map[string]bool{}}
	settings := map[string]Settings{}
	kubelets := []struct {
		v        string
		strategy model.Strategy
		ttl      time.Duration
	}{{"1.28.15", model.StrategyCache, 15 * time.Second}, {"1.36.3", model.StrategyCache, 0}, {"1.36.3", model.StrategyWatch, 15 * time.Second}, {"1.36.3", model.StrategyGet, 0}}
	for i, k := range kubelets {
		name := fmt.Sprint("node-", i)
		inv.Nodes = append(inv.Nodes, inventory.NodeInfo{Name: name, KubeletVersion: "v" + k.v})
		settings[name] = Settings{KubeletVersion: "v" + k.v, Version: version.MustParseGeneric(k.v), Strategy: k.strategy,
			SyncFrequency: time.Minute, TTL: k.ttl, Source: FromConfigz}
	}
	for ns := range 3 {
		namespace := fmt.Sprint("team-", ns)
		for i := range 5 { // cm-5 is missing
			inv.AddObject(model.ConfigMap, namespace, fmt.Sprint("cm-", i), i == 4)
		}
		for i := range 12 {
			inv.Pods = append(inv.Pods, inventory.PodInfoOf(randomPod(r, namespace, i)))
		}
	}
	return Cluster{Inventory: inv, Settings: settings}
}

// randomPod is pod i of namespace: one of three workloads, on a random
// node, with one to three configMap volumes (a required one missing now
// and then), perhaps mounted with subPath, perhaps converted already or
// opted out.
func randomPod(r *rand.Rand, namespace string, i int) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprint("pod-", i), Labels: map[string]string{}},
		Spec: corev1.PodSpec{NodeName: fmt.Sprint("node-", r.IntN(4)), Containers: []corev1.Container{{Name: "app"}}}}
	switch r.IntN(3) {
	case 0:
		p.Labels["pod-template-hash"] = "5d8f"
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-5d8f", Controller: ptr.To(true)}}
	case 1:
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "StatefulSet", Name: "db", Controller: ptr.To(true)}}
	}
	for v := range 1 + r.IntN(3) {
		name := fmt.Sprint("vol-", v)
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprint("cm-", r.IntN(6))}, Optional: ptr.To(r.IntN(2) == 0)}}})
		mount := corev1.VolumeMount{Name: name, MountPath: "/etc/" + name}
		if r.IntN(3) == 0 {
			mount.SubPath = "key"
		}
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, mount)
	}
	switch r.IntN(6) {
	case 0:
		convert.PodSpec(&p.Spec, nil)
	case 1:
		p.Annotations = map[string]string{podrefs.ServeLabel: podrefs.ServeDisabled}
	}
	return p
}

// A pod's workload is its controller's, a Deployment's where a ReplicaSet
// carries its pod-template-hash, and the pod itself without one.
func TestWorkloadOf(t *testing.T) {
	owned := func(kind, name, hash string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{}}}
		if kind != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: name, Controller: ptr.To(true)}}
		}
		if hash != "" {
			p.Labels["pod-template-hash"] = hash
		}
		return p
	}
	for _, c := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{owned("ReplicaSet", "web-5d8f", "5d8f"), "Deployment/web"},
		{owned("ReplicaSet", "web-5d8f", ""), "ReplicaSet/web-5d8f"},
		{owned("ReplicaSet", "other", "5d8f"), "ReplicaSet/other"},
		{owned("StatefulSet", "db", ""), "StatefulSet/db"},
		{owned("Job", "backup-29012", ""), "Job/backup-29012"},
		{owned("", "", ""), "Pod/p"},
	} {
		if got := inventory.WorkloadOf(c.pod); got != c.want {
			t.Errorf("%+v: %q, want %q", c.pod.OwnerReferences, got, c.want)
		}
	}
}

// kube-system's pods never move: the webhook does not touch them.
func TestKubeSystemNeverMoves(t *testing.T) {
	for ns, want := range map[string]int{"kube-system": 0, "shop": 1} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app"}},
			Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}}}
		if got := len(inventory.PodInfoOf(p).Unconverted); got != want {
			t.Errorf("a pod of %s: %d volumes that could move, want %d", ns, got, want)
		}
	}
}
