package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/pkg/convert"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// After thousands of random events (pods created, restarted and deleted,
// ConfigMaps and Secrets created, changed, made immutable and deleted,
// nodes added, removed, upgraded and given another TTL, namespaces opted
// in and out, and in one run Secrets forbidden to list for the first
// half), the report the analyzer keeps by recomputing the parts the
// events touched is the report a full computation makes from a fresh list
// of the cluster, to the last bit.
func TestIncrementalIsAFullComputation(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, 57))
			g := &randomCluster{r: r, client: fake.NewClientset()}
			var forbidden atomic.Bool
			forbidden.Store(seed == 1)
			g.client.PrependReactor("list", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
				if forbidden.Load() {
					return true, nil, apierrors.NewForbidden(corev1.Resource("secrets"), "", errors.New("not yet"))
				}
				return false, nil, nil
			})
			for range 4 {
				g.addNode()
			}
			for range 60 {
				g.step()
			}
			o := analyze.DefaultOptions()
			o.ReadConfigz = false
			a := runAnalyzer(t, g.client, Options{Analyze: o, Quiet: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond, SecretsRecheck: 50 * time.Millisecond})
			for batch := range 10 {
				if batch == 5 {
					forbidden.Store(false)
				}
				for range 200 {
					g.step()
				}
				holdsFullComputation(t, g.client, a, batch)
			}
		})
	}
}

// holdsFullComputation waits until a's report is what a full computation
// from a fresh list says, or fails with the first difference.
func holdsFullComputation(t *testing.T, client *fake.Clientset, a *Analyzer, batch int) {
	t.Helper()
	ctx := context.Background()
	o := analyze.DefaultOptions()
	o.ReadConfigz = false
	inv, err := inventory.List(ctx, client, "", 500, nil)
	if err != nil {
		t.Fatal(err)
	}
	settings, _, err := analyze.NodeSettings(ctx, client, inv.Nodes, o)
	if err != nil {
		t.Fatal(err)
	}
	want := analyze.Predict(analyze.Cluster{Inventory: inv, Settings: settings}, o.Top)
	want.Warnings = nil
	wantJSON, _ := json.Marshal(want)
	testutil.Eventually(t, 10*time.Millisecond, 10*time.Second, func() error {
		got := a.Report().Result
		got.Warnings = nil
		gotJSON, _ := json.Marshal(got)
		if string(gotJSON) != string(wantJSON) {
			return fmt.Errorf("after batch %d the report is not the full computation's: %s", batch, firstDifference(string(gotJSON), string(wantJSON)))
		}
		return nil
	})
}

// firstDifference shows where two strings part.
func firstDifference(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-150)
	return fmt.Sprintf("at %d:\n got: %s\nwant: %s", i, a[from:min(len(a), i+150)], b[from:min(len(b), i+150)])
}

// randomCluster makes random changes to a fake cluster.
type randomCluster struct {
	r      *rand.Rand
	client *fake.Clientset
	nodes  []string
	pods   []*corev1.Pod
	next   int
}

var (
	randomNamespaces = []string{"shop", "team-a", "team-b"}
	versions         = []string{"v1.28.15", "v1.31.4", "v1.37.2", "not-a-version"}
)

// step makes one random change.
func (g *randomCluster) step() {
	ctx := context.Background()
	switch n := g.r.IntN(100); {
	case n < 30:
		g.addPod()
	case n < 45 && len(g.pods) > 0:
		i := g.r.IntN(len(g.pods))
		p := g.pods[i]
		g.pods = append(g.pods[:i], g.pods[i+1:]...)
		ignoreNotFound(g.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}))
	case n < 55 && len(g.pods) > 0:
		p := g.pods[g.r.IntN(len(g.pods))]
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{
			Running: &corev1.ContainerStateRunning{StartedAt: g.time()}}}}
		_, _ = g.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	case n < 80:
		g.object()
	case n < 86:
		g.addNode()
	case n < 89 && len(g.nodes) > 1:
		i := g.r.IntN(len(g.nodes))
		ignoreNotFound(g.client.CoreV1().Nodes().Delete(ctx, g.nodes[i], metav1.DeleteOptions{}))
		g.nodes = append(g.nodes[:i], g.nodes[i+1:]...)
	case n < 95 && len(g.nodes) > 0:
		name := g.nodes[g.r.IntN(len(g.nodes))]
		_, _ = g.client.CoreV1().Nodes().Update(ctx, g.node(name), metav1.UpdateOptions{})
	default:
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: g.pick(randomNamespaces), Labels: map[string]string{podrefs.ServeLabel: podrefs.ServeEnabled}}}
		if _, err := g.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			_ = g.client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		}
	}
}

func ignoreNotFound(err error) {
	if err != nil && !apierrors.IsNotFound(err) {
		panic(err)
	}
}

func (g *randomCluster) pick(from []string) string { return from[g.r.IntN(len(from))] }

// time is one of a few minutes' times, so that objects change before and
// after containers start.
func (g *randomCluster) time() metav1.Time {
	return metav1.NewTime(time.Date(2026, 11, 28, 10, g.r.IntN(10), 0, 0, time.UTC))
}

// node is a Node of a random kubelet version and TTL.
func (g *randomCluster) node(name string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Status.NodeInfo.KubeletVersion = g.pick(versions)
	if ttl := g.r.IntN(4); ttl > 0 {
		n.Annotations = map[string]string{"node.alpha.kubernetes.io/ttl": fmt.Sprint(15 * (ttl - 1))}
	}
	return n
}

func (g *randomCluster) addNode() {
	name := fmt.Sprint("node-", g.next)
	g.next++
	if _, err := g.client.CoreV1().Nodes().Create(context.Background(), g.node(name), metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	g.nodes = append(g.nodes, name)
}

// object creates, changes or deletes one of a few ConfigMaps and Secrets
// of each namespace.
func (g *randomCluster) object() {
	ctx := context.Background()
	meta := metav1.ObjectMeta{Namespace: g.pick(randomNamespaces), Name: fmt.Sprint("obj-", g.r.IntN(5)), CreationTimestamp: g.time()}
	meta.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Time: ptr.To(g.time())}}
	immutable := ptr.To(g.r.IntN(4) == 0)
	keys := map[string]string{}
	for _, k := range []string{"a", "b", "key"} {
		if g.r.IntN(2) == 0 {
			keys[k] = "v"
		}
	}
	if g.r.IntN(2) == 0 {
		cms := g.client.CoreV1().ConfigMaps(meta.Namespace)
		if g.r.IntN(4) == 0 {
			ignoreNotFound(cms.Delete(ctx, meta.Name, metav1.DeleteOptions{}))
			return
		}
		cm := &corev1.ConfigMap{ObjectMeta: meta, Immutable: immutable, Data: keys}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			_, _ = cms.Update(ctx, cm, metav1.UpdateOptions{})
		}
		return
	}
	secrets := g.client.CoreV1().Secrets(meta.Namespace)
	if g.r.IntN(4) == 0 {
		ignoreNotFound(secrets.Delete(ctx, meta.Name, metav1.DeleteOptions{}))
		return
	}
	s := &corev1.Secret{ObjectMeta: meta, Immutable: immutable, Data: map[string][]byte{}}
	for k := range keys {
		s.Data[k] = []byte("v")
	}
	if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, _ = secrets.Update(ctx, s, metav1.UpdateOptions{})
	}
}

// addPod creates a pod of random references on a random node (now and
// then one that does not exist).
func (g *randomCluster) addPod() {
	node := fmt.Sprint("node-", g.r.IntN(g.next+1))
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: g.pick(randomNamespaces), Name: fmt.Sprint("pod-", g.r.IntN(1000)), Labels: map[string]string{}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if g.r.IntN(2) == 0 {
		p.Labels["pod-template-hash"] = "5d8f"
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-5d8f", Controller: ptr.To(true)}}
	}
	ctr := &p.Spec.Containers[0]
	for v := range g.r.IntN(4) {
		name := fmt.Sprint("vol-", v)
		ref := corev1.LocalObjectReference{Name: fmt.Sprint("obj-", g.r.IntN(5))}
		source := corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref, Optional: ptr.To(g.r.IntN(3) == 0)}}
		if g.r.IntN(3) == 0 {
			source = corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: ref.Name}}
		}
		if g.r.IntN(4) == 0 {
			source.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: ref, Items: []corev1.KeyToPath{{Key: "key", Path: "key"}}}
			source.Secret = nil
		}
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: source})
		mount := corev1.VolumeMount{Name: name, MountPath: "/etc/" + name}
		if g.r.IntN(3) == 0 {
			mount.SubPath = "key"
		}
		ctr.VolumeMounts = append(ctr.VolumeMounts, mount)
	}
	if g.r.IntN(2) == 0 {
		ctr.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprint("obj-", g.r.IntN(5))}}}}
	}
	switch g.r.IntN(5) {
	case 0:
		convert.PodSpec(&p.Spec, nil)
	case 1:
		p.Annotations = map[string]string{podrefs.ServeLabel: podrefs.ServeDisabled}
	}
	if g.r.IntN(2) == 0 {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: g.time()}}}}
	}
	if _, err := g.client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			panic(err)
		}
		return
	}
	g.pods = append(g.pods, p)
}
