//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/pkg/apimetrics"
	"github.com/nodeagent-io/nodeagent/pkg/report"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// TestAnalyzeAtScale runs `nodeagent analyze` end to end (lists, findings,
// prediction, every what-if) against the local apiserver holding, in turn,
// each number of Node objects in $NODEAGENT_ANALYZE_SCALE_NODES (`make
// analyze-scale`, "5000,10000"; skipped without it), the cluster grown
// from one to the next, and 30 pods a node, spread over namespaces of 300
// pods, each pod mounting two of its namespace's 100 ConfigMaps and one of
// its 50 Secrets, reading one ConfigMap into its environment, and carrying
// the service-account volume: objects only, no kubelet. At each size it
// reports analyze's wall time, its peak memory and the requests it sent
// (the apiserver's counters over its run, when nothing else runs), and
// then `analyze --serve`'s (serveAtScale), a row each in
// docs/performance.md's tables.
func TestAnalyzeAtScale(t *testing.T) {
	var sizes []int
	for _, field := range strings.Split(os.Getenv("NODEAGENT_ANALYZE_SCALE_NODES"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n <= 0 || len(sizes) > 0 && n <= sizes[len(sizes)-1] {
			t.Skip("skipped: set NODEAGENT_ANALYZE_SCALE_NODES to growing node counts, 5000,10000 (make analyze-scale)")
		}
		sizes = append(sizes, n)
	}
	config := cp.RESTConfig()
	config.QPS, config.Burst = 2000, 4000
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	c := &scaleCluster{t: t, client: client, start: time.Now()}
	t.Cleanup(c.delete)
	oneShot := report.Table{Header: []string{"nodes", "pods", "ConfigMaps", "Secrets", "wall time", "peak memory", "requests"}}
	serve := report.Table{Header: serveHeader}
	for _, nodes := range sizes {
		c.grow(nodes)
		oneShot.Rows = append(oneShot.Rows, analyzeOnce(t, client, c))
		serve.Rows = append(serve.Rows, serveAtScale(t, client, c))
	}
	writeDocTable(t, "analyze-scale", oneShot)
	writeDocTable(t, "analyze-serve-scale", serve)
}

// The cluster's shape: pods a node, pods a namespace, and each
// namespace's ConfigMaps and Secrets.
const scalePodsPerNode, scalePodsPerNamespace, scaleConfigMaps, scaleSecrets = 30, 300, 100, 50

// scaleCluster is the cluster TestAnalyzeAtScale grows.
type scaleCluster struct {
	t          *testing.T
	client     kubernetes.Interface
	start      time.Time
	nodes      int
	namespaces []string
	created    atomic.Int64
}

func (c *scaleCluster) pods() int { return c.nodes * scalePodsPerNode }

// pod names the cluster's i-th pod (modulo their number).
func (c *scaleCluster) pod(i int) (namespace, name string) {
	i %= c.pods()
	return c.namespaces[i/scalePodsPerNamespace], fmt.Sprintf("pod-%06d", i)
}

// grow adds nodes, namespaces, objects and pods until the cluster has
// nodes nodes.
func (c *scaleCluster) grow(nodes int) {
	ctx := context.Background()
	labels := map[string]string{"nodeagent.io/analyze-scale": "true"}
	c.parallel("nodes", c.nodes, nodes, func(i int) error {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("scale-node-%05d", i), Labels: labels,
			Annotations: map[string]string{corev1.ObjectTTLAnnotationKey: "300"}}}
		node, err := c.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		node.Status.NodeInfo.KubeletVersion = "v1.36.3"
		_, err = c.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	firstPod, firstNamespace := c.pods(), len(c.namespaces)
	c.nodes = nodes
	namespaces := (c.pods() + scalePodsPerNamespace - 1) / scalePodsPerNamespace
	c.namespaces = append(c.namespaces, make([]string, namespaces-firstNamespace)...)
	c.parallel("namespaces", firstNamespace, namespaces, func(i int) error {
		ns, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "scale-"}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		c.namespaces[i] = ns.Name
		return nil
	})
	const perNamespace = scaleConfigMaps + scaleSecrets
	c.parallel("ConfigMaps and Secrets", firstNamespace*perNamespace, namespaces*perNamespace, func(i int) error {
		ns, j := c.namespaces[i/perNamespace], i%perNamespace
		if j < scaleConfigMaps {
			_, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", j)},
				Data: map[string]string{"config.yaml": "x: 1\n"}}, metav1.CreateOptions{})
			return err
		}
		_, err := c.client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("secret-%03d", j-scaleConfigMaps)},
			Data: map[string][]byte{"password": []byte("x")}}, metav1.CreateOptions{})
		return err
	})
	for _, ns := range c.namespaces[firstNamespace:] {
		if err := controlplane.WaitForServiceAccount(ctx, c.client, ns, time.Minute); err != nil {
			c.t.Fatal(err)
		}
	}
	c.parallel("pods", firstPod, c.pods(), func(i int) error {
		ns, name := c.pod(i)
		_, err := c.client.CoreV1().Pods(ns).Create(ctx, scalePod(name, i), metav1.CreateOptions{})
		return err
	})
	c.t.Logf("the cluster holds %d nodes, %d pods in %d namespaces, %d ConfigMaps and %d Secrets after %s", c.nodes, c.pods(), len(c.namespaces),
		len(c.namespaces)*scaleConfigMaps, len(c.namespaces)*scaleSecrets, time.Since(c.start).Round(time.Second))
}

// scalePod is the cluster's i-th pod.
func scalePod(name string, i int) *corev1.Pod {
	cm := func(k int) corev1.VolumeSource {
		return corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("cm-%03d", k%scaleConfigMaps)}}}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: fmt.Sprintf("scale-node-%05d", i/scalePodsPerNode), TerminationGracePeriodSeconds: ptr.To[int64](0),
			Volumes: []corev1.Volume{{Name: "a", VolumeSource: cm(i)}, {Name: "b", VolumeSource: cm(i / 7)},
				{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: fmt.Sprintf("secret-%03d", i%scaleSecrets)}}}},
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				VolumeMounts: []corev1.VolumeMount{{Name: "a", MountPath: "/a"}, {Name: "b", MountPath: "/b"}, {Name: "s", MountPath: "/s"}},
				EnvFrom:      []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("cm-%03d", (i/3)%scaleConfigMaps)}}}}}}}}
}

// parallel runs job for each i from first to end, 32 at a time, saying
// how far it is every 30 s.
func (c *scaleCluster) parallel(what string, first, end int, job func(i int) error) {
	c.t.Helper()
	c.created.Store(0)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(30 * time.Second):
				c.t.Logf("%s: %d of %d after %s", what, c.created.Load(), end-first, time.Since(c.start).Round(time.Second))
			}
		}
	}()
	g, gctx := errgroup.WithContext(context.Background())
	g.SetLimit(32)
	for i := first; i < end; i++ {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if err := job(i); err != nil {
				return fmt.Errorf("%s %d: %w", what, i, err)
			}
			c.created.Add(1)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		c.t.Fatal(err)
	}
}

// delete deletes what grow created.
func (c *scaleCluster) delete() {
	ctx := context.Background()
	_ = c.client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "nodeagent.io/analyze-scale=true"})
	for _, ns := range c.namespaces {
		_ = c.client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	}
}

// analyzeOnce runs `nodeagent analyze` once on c and returns its row of
// the analyze-scale table.
func analyzeOnce(t *testing.T, client kubernetes.Interface, c *scaleCluster) []string {
	before := scrapeAPIServer(t)
	dir := filepath.Join(repoRoot(t), "_output", "analyze-scale")
	cmd := exec.Command(e2eutil.NodeagentBinary(t), "analyze", "--kubeconfig="+cp.KubeconfigPath, "--read-configz=false",
		"-o", "json", "--output-dir="+dir)
	cmd.Stderr = os.Stderr
	began := time.Now()
	out, err := cmd.Output()
	wall := time.Since(began)
	if err != nil {
		t.Fatalf("nodeagent analyze: %v", err)
	}
	after := scrapeAPIServer(t)
	var r analyze.Result
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss * 1024
	var lists float64
	for _, resource := range []string{"nodes", "pods", "configmaps", "secrets"} {
		match := map[string]string{"verb": "LIST", "resource": resource}
		lists += after.Sum(apimetrics.APIServerRequests, match) - before.Sum(apimetrics.APIServerRequests, match)
	}
	t.Logf("analyze: %s wall, %.0f MiB peak, %.0f LIST requests; %d nodes, %d pods, %d findings, %.1f GET/s predicted, update delay %+v",
		wall.Round(100*time.Millisecond), float64(peak)/(1<<20), lists, r.Cluster.Nodes, r.Cluster.Pods, len(r.Findings),
		r.Total.Predicted.Sum().APIServerGets, r.Total.UpdateDelay)
	if r.Cluster.Pods < c.pods() || r.Cluster.Nodes < c.nodes {
		t.Errorf("analyze saw %d nodes and %d pods, want at least %d and %d", r.Cluster.Nodes, r.Cluster.Pods, c.nodes, c.pods())
	}
	namespaces := len(c.namespaces)
	return []string{fmt.Sprint(c.nodes), fmt.Sprint(c.pods()), fmt.Sprint(namespaces * scaleConfigMaps), fmt.Sprint(namespaces * scaleSecrets),
		fmt.Sprintf("%.1f s", wall.Seconds()), fmt.Sprintf("%.0f MiB", float64(peak)/(1<<20)), fmt.Sprintf("%.0f LISTs", lists)}
}
