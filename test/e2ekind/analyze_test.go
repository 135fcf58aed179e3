//go:build e2e

package e2ekind

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/pkg/auditlog"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/report"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// runAnalyze runs `nodeagent analyze` on the kind cluster as its admin
// (who may read every kubelet's /configz) and returns its result; the
// report stays under _output/e2e-kind/<name>.
func runAnalyze(t *testing.T, name string, args ...string) analyze.Result {
	t.Helper()
	cmd := exec.Command(e2eutil.NodeagentBinary(t), append([]string{"analyze", "--kubeconfig=" + kubeconfigPath,
		"-o", "json", "--output-dir=" + filepath.Join(outputDir, name)}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nodeagent analyze: %v", err)
	}
	var r analyze.Result
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("analyze -o json: %v\n%s", err, out)
	}
	return r
}

// auditTally copies the control plane's audit log and tallies its
// ConfigMap and Secret requests by user over window.
func auditTally(t *testing.T, window auditlog.Window) auditlog.Tally {
	t.Helper()
	return auditTallyIn(t, window, "")
}

// auditTallyIn is auditTally for the requests of namespace alone, or of
// every namespace where it is empty.
func auditTallyIn(t *testing.T, window auditlog.Window, namespace string) auditlog.Tally {
	t.Helper()
	tally, err := auditlog.TallyNamespace(copyAuditLog(t), window, namespace, "configmaps", "secrets")
	if err != nil {
		t.Fatal(err)
	}
	return tally
}

// copyAuditLog copies the control plane's audit log to a file of the
// test's and returns its path.
func copyAuditLog(t *testing.T) string {
	t.Helper()
	raw, err := nodeExec(clusterName+"-control-plane", "cat", auditLogOnNode)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkSettings holds every node's settings to what its kubelet runs with,
// read from its /configz.
func checkSettings(t *testing.T, r analyze.Result, strategy model.Strategy, syncFrequency time.Duration) {
	t.Helper()
	if len(r.Nodes) != 3 || r.Cluster.NodesFromConfigz != 3 {
		t.Fatalf("analyze saw %d nodes, %d of them from /configz; want 3 and 3 (warnings %q)", len(r.Nodes), r.Cluster.NodesFromConfigz, r.Warnings)
	}
	for _, n := range r.Nodes {
		if n.SettingsSource != analyze.FromConfigz || n.Strategy != strategy || n.SyncFrequencySeconds != syncFrequency.Seconds() || n.TTLSeconds != 0 {
			t.Errorf("%s: %s S=%gs T=%gs from %s; want %s S=%s T=0s (three nodes) from configz",
				n.Name, n.Strategy, n.SyncFrequencySeconds, n.TTLSeconds, n.SettingsSource, strategy, syncFrequency)
		}
	}
}

// analyzePods puts on every node a pod with its own ConfigMap, the shared
// ConfigMap, an immutable ConfigMap and a Secret as volumes, beside the
// service-account volume, and waits until they run.
func analyzePods(t *testing.T, ns string, nodes []string) {
	t.Helper()
	ctx := context.Background()
	create := func(obj interface{}) {
		var err error
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			_, err = clientset.CoreV1().ConfigMaps(ns).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Secret:
			_, err = clientset.CoreV1().Secrets(ns).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Pod:
			_, err = clientset.CoreV1().Pods(ns).Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Data: map[string]string{"k": "v"}})
	create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "frozen"}, Data: map[string]string{"k": "v"}, Immutable: ptr.To(true)})
	create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret"}, Data: map[string][]byte{"k": []byte("v")}})
	source := func(cm string) corev1.VolumeSource {
		return corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}
	}
	for _, node := range nodes {
		create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: node}, Data: map[string]string{"k": node}})
		volumes := []corev1.Volume{{Name: "own", VolumeSource: source(node)}, {Name: "shared", VolumeSource: source("shared")},
			{Name: "frozen", VolumeSource: source("frozen")},
			{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "secret"}}}}
		var mounts []corev1.VolumeMount
		for _, v := range volumes {
			mounts = append(mounts, corev1.VolumeMount{Name: v.Name, MountPath: "/" + v.Name})
		}
		create(&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "analyze-" + node},
			Spec: corev1.PodSpec{NodeName: node, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				TerminationGracePeriodSeconds: ptr.To[int64](1), Volumes: volumes,
				Containers: []corev1.Container{{Name: "pause", Image: podImage, VolumeMounts: mounts}}},
		})
	}
	eventually(t, 3*time.Minute, "the analyze pods running", func() string {
		for _, node := range nodes {
			p, err := clientset.CoreV1().Pods(ns).Get(ctx, "analyze-"+node, metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			if p.Status.Phase != corev1.PodRunning {
				return fmt.Sprintf("%s is %s", p.Name, p.Status.Phase)
			}
		}
		return ""
	})
}

// deletePods deletes the pods of ns and waits until they are gone.
func deletePods(t *testing.T, ns string) {
	ctx := context.Background()
	if err := clientset.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Error(err)
		return
	}
	eventually(t, 2*time.Minute, "the pods of "+ns+" gone", func() string {
		pods, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		if len(pods.Items) > 0 {
			return fmt.Sprintf("%d pods left", len(pods.Items))
		}
		return ""
	})
}

// TestAnalyzeKindKubeletsWatch runs `nodeagent analyze` on the kind
// cluster's real kubelets with their default Watch strategy: it reads every
// kubelet's settings from /configz, and predicts each node's open ConfigMap
// and Secret watches exactly as the audit log counts them (an immutable
// object's watch closes once it is seen). The Cache strategy's GETs are
// TestBesideKubeletCache's.
func TestAnalyzeKindKubeletsWatch(t *testing.T) {
	nodes := clusterNodes(t)
	ns := testNamespace(t, "e2e-kind-analyze")
	// Gone before the next test counts the pods its agents serve (this
	// runs before the namespace's own clean-up).
	t.Cleanup(func() { deletePods(t, ns) })
	analyzePods(t, ns, nodes)
	var r analyze.Result
	eventually(t, 3*time.Minute, "every node's watches as predicted", func() string {
		r = runAnalyze(t, "analyze-watch")
		tally := auditTally(t, auditlog.Window{})
		var wrong []string
		for _, n := range r.Nodes {
			user := "system:node:" + n.Name
			predicted := n.Predicted.ConfigMaps.Watches + n.Predicted.Secrets.Watches
			open := tally.Counts["configmaps"][user].OpenWatches + tally.Counts["secrets"][user].OpenWatches
			if open != predicted {
				wrong = append(wrong, fmt.Sprintf("%s: %d watches open, predicted %d", n.Name, open, predicted))
			}
		}
		return strings.Join(wrong, "; ")
	})
	checkSettings(t, r, model.StrategyWatch, time.Minute)
	watches := report.Table{Header: []string{"node", "ConfigMap watches predicted", "Secret watches predicted"}}
	for _, n := range r.Nodes {
		if s := n.Predicted.Sum(); s.APIServerGets != 0 || s.Watches == 0 {
			t.Errorf("%s on Watch: predicted %.2f GET/s and %d watches; want none and some", n.Name, s.APIServerGets, s.Watches)
		}
		t.Logf("%s: %d ConfigMap and %d Secret watches, as predicted", n.Name, n.Predicted.ConfigMaps.Watches, n.Predicted.Secrets.Watches)
		watches.Rows = append(watches.Rows, []string{n.Name, fmt.Sprint(n.Predicted.ConfigMaps.Watches), fmt.Sprint(n.Predicted.Secrets.Watches)})
	}
	writeDocTable(t, "analyze-watch", watches)
}

// checkAnalyzeCache holds analyze's prediction for the kind kubelets on the
// Cache strategy to what the audit log attributes to each over window:
// each node's GETs within 10 %, none of them quorum reads in steady state
// (T = 0, first-reference: every remount refreshes at resourceVersion 0).
func checkAnalyzeCache(t *testing.T, syncFrequency time.Duration, window auditlog.Window) {
	t.Helper()
	r := runAnalyze(t, "analyze-cache")
	checkSettings(t, r, model.StrategyCache, syncFrequency)
	tally := auditTally(t, window)
	seconds := window.To.Sub(window.From).Seconds()
	gets := report.Table{Header: []string{"node", "behaviour", "GET/s predicted", "GET/s audited"}}
	for _, n := range r.Nodes {
		user := "system:node:" + n.Name
		audited := float64(tally.Counts["configmaps"][user].Gets()+tally.Counts["secrets"][user].Gets()) / seconds
		predicted := n.Predicted.Sum().APIServerGets
		t.Logf("%s (%s): predicted %.2f GET/s, audited %.2f GET/s", n.Name, n.Behaviour, predicted, audited)
		if math.Abs(audited-predicted) > 0.1*predicted {
			t.Errorf("%s: audited %.2f GET/s, predicted %.2f: more than 10 %% apart", n.Name, audited, predicted)
		}
		gets.Rows = append(gets.Rows, []string{n.Name, string(n.Behaviour), fmt.Sprintf("%.2f", predicted), fmt.Sprintf("%.2f", audited)})
	}
	writeDocTable(t, "analyze-cache", gets)
}
