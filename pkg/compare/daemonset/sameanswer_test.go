package daemonset

import (
	"context"
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/pkg/compare"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
	"github.com/nodeagent-io/nodeagent/pkg/ttl"
)

// compare --daemonset and analyze read one cluster the same way: the same
// served pods, the same references (Secrets, missing objects, the
// service-account volume) and the same TTL. On the same cluster objects
// compare's model of each reference kubelet and analyze's prediction for
// a kubelet of that release and strategy are the same figures.
func TestCompareAndAnalyzeAgree(t *testing.T) {
	const s, ttlSeconds = time.Minute, "30"
	nodes := []string{"n1", "n2"}
	yes := true
	var objects []runtime.Object
	for _, n := range nodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Annotations: map[string]string{ttl.Annotation: ttlSeconds}}}
		node.Status.NodeInfo.KubeletVersion = "v1.36.3"
		objects = append(objects, node)
	}
	configMap := func(ns, name string, immutable bool) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Immutable: &immutable}
	}
	objects = append(objects,
		configMap("a", "cfg", false), configMap("a", "frozen", true), configMap("a", "kube-root-ca.crt", false),
		configMap("b", "cfg", false), configMap("b", "kube-root-ca.crt", false),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "tls"}},
	)
	pod := func(ns, name, node string, volumes ...corev1.Volume) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c"}}, Volumes: volumes}}
		p.Status.Phase = corev1.PodRunning
		for _, v := range volumes {
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: v.Name})
		}
		return p
	}
	cm := func(name string) corev1.Volume {
		return corev1.Volume{Name: "v-" + name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}
	}
	serviceAccount := corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
		}}}}
	secret := corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls", Optional: &yes}}}
	terminating := pod("a", "leaving", "n1", cm("cfg"))
	terminating.DeletionTimestamp = &metav1.Time{}
	objects = append(objects,
		pod("a", "web-1", "n1", cm("cfg"), cm("frozen"), serviceAccount, secret),
		pod("a", "web-2", "n1", cm("cfg"), serviceAccount),
		pod("a", "broken", "n1", cm("missing"), serviceAccount), // a failing mount, retried
		pod("b", "api", "n2", cm("cfg"), serviceAccount),
		pod("b", "only-secret", "n2", secret),
		terminating,
	)
	client := fake.NewClientset(objects...)
	ctx := context.Background()

	inv, err := inventory.List(ctx, client, "", 500, nil)
	if err != nil {
		t.Fatal(err)
	}
	served := servedPods(inv, nodes, "run")
	var layout []model.Node
	for _, n := range nodes {
		layout = append(layout, model.Node{Name: n, Pods: served[n]})
	}
	for _, ref := range []modes.Mode{modes.KubeletV128, modes.KubeletV137, modes.KubeletV137Watch} {
		k, _ := ref.ReferenceKubelet()
		settings := map[string]analyze.Settings{}
		for _, n := range inv.Nodes {
			settings[n.Name] = analyze.Settings{KubeletVersion: "v" + k.Release.String(), Version: k.Release, Strategy: k.Strategy,
				SyncFrequency: s, TTL: n.TTL, Source: analyze.FromConfigz}
		}
		predicted := analyze.Predict(analyze.Cluster{Inventory: inv, Settings: settings}, 10).Total.Predicted.ConfigMaps
		ttls := map[string]time.Duration{}
		for _, n := range layout {
			ttls[n.Name] = 30 * time.Second
		}
		modelled := compare.Prediction(layout, s, ref, ttls).ByKind[model.ConfigMap]
		if !sameRate(predicted.APIServerGets, modelled.APIServerGetQPS) || !sameRate(predicted.EtcdReads, modelled.EtcdGetQPS) ||
			predicted.Watches != modelled.Watches {
			t.Errorf("%s: analyze predicts %.4f GET/s, %.4f etcd reads/s, %d watches; compare's model %.4f, %.4f, %d",
				ref, predicted.APIServerGets, predicted.EtcdReads, predicted.Watches,
				modelled.APIServerGetQPS, modelled.EtcdGetQPS, modelled.Watches)
		}
		if modelled.APIServerGetQPS == 0 && modelled.Watches == 0 {
			t.Errorf("%s: the model predicts no load at all", ref)
		}
	}
}

func sameRate(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(a)) }
