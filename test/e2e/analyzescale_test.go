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
// prediction, every what-if) against the local apiserver holding
// $NODEAGENT_ANALYZE_SCALE_NODES Node objects (`make analyze-scale`;
// skipped without it) and 30 pods a node, spread over namespaces of 300
// pods, each pod mounting two of its namespace's 100 ConfigMaps and one of
// its 50 Secrets, reading one ConfigMap into its environment, and carrying
// the service-account volume: objects only, no kubelet. It reports
// analyze's wall time, its peak memory and the requests it sent (the
// apiserver's counters over its run, when nothing else runs), to
// docs/performance.md's table.
func TestAnalyzeAtScale(t *testing.T) {
	nodes, err := strconv.Atoi(os.Getenv("NODEAGENT_ANALYZE_SCALE_NODES"))
	if err != nil || nodes <= 0 {
		t.Skip("skipped: set NODEAGENT_ANALYZE_SCALE_NODES (make analyze-scale)")
	}
	const podsPerNode, podsPerNamespace, configMapsPerNamespace, secretsPerNamespace = 30, 300, 100, 50
	pods := nodes * podsPerNode
	namespaces := (pods + podsPerNamespace - 1) / podsPerNamespace
	ctx := context.Background()
	config := cp.RESTConfig()
	config.QPS, config.Burst = 2000, 4000
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var created atomic.Int64
	progress := func(what string, total int) func() {
		created.Store(0)
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(30 * time.Second):
					t.Logf("%s: %d of %d after %s", what, created.Load(), total, time.Since(start).Round(time.Second))
				}
			}
		}()
		return func() { close(stop) }
	}
	parallel := func(what string, total int, job func(i int) error) {
		t.Helper()
		done := progress(what, total)
		defer done()
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(32)
		for i := range total {
			if gctx.Err() != nil {
				break
			}
			g.Go(func() error {
				if err := job(i); err != nil {
					return fmt.Errorf("%s %d: %w", what, i, err)
				}
				created.Add(1)
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
	}

	labels := map[string]string{"nodeagent.io/analyze-scale": "true"}
	parallel("nodes", nodes, func(i int) error {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("scale-node-%05d", i), Labels: labels,
			Annotations: map[string]string{corev1.ObjectTTLAnnotationKey: "300"}}}
		node, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		node.Status.NodeInfo.KubeletVersion = "v1.36.3"
		_, err = client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	t.Cleanup(func() {
		_ = client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "nodeagent.io/analyze-scale=true"})
	})
	names := make([]string, namespaces)
	parallel("namespaces", namespaces, func(i int) error {
		ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "scale-"}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		names[i] = ns.Name
		return nil
	})
	t.Cleanup(func() {
		for _, ns := range names {
			_ = client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		}
	})
	parallel("ConfigMaps and Secrets", namespaces*(configMapsPerNamespace+secretsPerNamespace), func(i int) error {
		ns, j := names[i/(configMapsPerNamespace+secretsPerNamespace)], i%(configMapsPerNamespace+secretsPerNamespace)
		if j < configMapsPerNamespace {
			_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", j)},
				Data: map[string]string{"config.yaml": "x: 1\n"}}, metav1.CreateOptions{})
			return err
		}
		_, err := client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("secret-%03d", j-configMapsPerNamespace)},
			Data: map[string][]byte{"password": []byte("x")}}, metav1.CreateOptions{})
		return err
	})
	for _, ns := range names {
		if err := controlplane.WaitForServiceAccount(ctx, client, ns, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	parallel("pods", pods, func(i int) error {
		ns := names[i/podsPerNamespace]
		cm := func(k int) corev1.VolumeSource {
			return corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("cm-%03d", k%configMapsPerNamespace)}}}
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%06d", i)},
			Spec: corev1.PodSpec{NodeName: fmt.Sprintf("scale-node-%05d", i/podsPerNode), TerminationGracePeriodSeconds: ptr.To[int64](0),
				Volumes: []corev1.Volume{{Name: "a", VolumeSource: cm(i)}, {Name: "b", VolumeSource: cm(i / 7)},
					{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: fmt.Sprintf("secret-%03d", i%secretsPerNamespace)}}}},
				Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
					VolumeMounts: []corev1.VolumeMount{{Name: "a", MountPath: "/a"}, {Name: "b", MountPath: "/b"}, {Name: "s", MountPath: "/s"}},
					EnvFrom:      []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("cm-%03d", (i/3)%configMapsPerNamespace)}}}}}}}}
		_, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	t.Logf("created %d nodes, %d pods in %d namespaces, %d ConfigMaps and %d Secrets in %s", nodes, pods, namespaces,
		namespaces*configMapsPerNamespace, namespaces*secretsPerNamespace, time.Since(start).Round(time.Second))

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
	requests := func(verb, resource string) float64 {
		match := map[string]string{"verb": verb, "resource": resource}
		return after.Sum(apimetrics.APIServerRequests, match) - before.Sum(apimetrics.APIServerRequests, match)
	}
	var lists float64
	for _, resource := range []string{"nodes", "pods", "configmaps", "secrets"} {
		lists += requests("LIST", resource)
	}
	t.Logf("analyze: %s wall, %.0f MiB peak, %.0f LIST requests; %d nodes, %d pods, %d findings, %.1f GET/s predicted, update delay %+v",
		wall.Round(100*time.Millisecond), float64(peak)/(1<<20), lists, r.Cluster.Nodes, r.Cluster.Pods, len(r.Findings),
		r.Total.Predicted.Sum().APIServerGets, r.Total.UpdateDelay)
	if r.Cluster.Pods < pods || r.Cluster.Nodes < nodes {
		t.Errorf("analyze saw %d nodes and %d pods, want at least %d and %d", r.Cluster.Nodes, r.Cluster.Pods, nodes, pods)
	}
	writeDocTable(t, "analyze-scale", report.Table{
		Header: []string{"nodes", "pods", "ConfigMaps", "Secrets", "wall time", "peak memory", "requests"},
		Rows: [][]string{{fmt.Sprint(nodes), fmt.Sprint(pods), fmt.Sprint(namespaces * configMapsPerNamespace), fmt.Sprint(namespaces * secretsPerNamespace),
			fmt.Sprintf("%.1f s", wall.Seconds()), fmt.Sprintf("%.0f MiB", float64(peak)/(1<<20)), fmt.Sprintf("%.0f LISTs", lists)}},
	})
	serveAtScale(t, client, names, 20, func(i int) (string, string) {
		i %= pods
		return names[i/podsPerNamespace], fmt.Sprintf("pod-%06d", i)
	})
}
