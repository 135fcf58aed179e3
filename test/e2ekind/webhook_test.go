//go:build e2e

package e2ekind

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/pkg/auditlog"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/report"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// The driver's webhook in TestCSIDriver's release: installed with
// lifetimes of a minute or less (webhookArgs), so that its CA and its
// serving certificate are each renewed within the test's update run.
const (
	webhookName   = csiRelease + "-webhook"
	webhookSecret = webhookName + "-tls"
	webappRelease = "webapp"
	webappChart   = "test/e2ekind/testdata/webapp"
)

// webhookArgs are installCSIDriver's arguments for the webhook: a CA due
// about every 40 s (signing a check or two later, once the caBundle has
// it), a certificate about every 20 s.
var webhookArgs = []string{"--set", "webhook.enabled=true", "--set", "webhook.caLifetime=60s", "--set", "webhook.certLifetime=30s"}

// The update run of csiWithoutEditing: long enough for a CA renewal.
const (
	webhookWindow  = 45 * time.Second
	webhookMeanGap = 1500 * time.Millisecond
)

// csiWithoutEditing installs a chart nobody here wrote for the driver
// (testdata/webapp: a subPath-mounted configuration file, a sidecar
// reading the whole ConfigMap, a plain configMap volume) and moves it to
// the driver without editing it: analyze's move-to-driver row for the
// Deployment predicts the driver's watches, the namespace opts in, a
// rollout restart has the webhook convert the new pod at admission, and
// then the audit log counts the watches predicted; every update reaches
// the subPath file and both volumes in every container within a second,
// while pods are admitted through the webhook as its CA and certificate
// are renewed (none refused, none left unconverted); with the webhook's
// pods gone, a new pod starts unconverted and analyze reports it.
func csiWithoutEditing(t *testing.T) {
	waitWebhookReady(t, 2)
	ns := testNamespace(t, "e2e-kind-webhook")
	helm(t, "install", webappRelease, webappChart, "--namespace", ns, "--wait", "--timeout", "3m", "--set", "image="+podImage,
		"--set-string", "configFile="+e2eutil.DelayValueKey+",config."+e2eutil.DelayValueKey+"=0,site."+e2eutil.DelayValueKey+"=0")
	t.Cleanup(func() { helm(t, "uninstall", webappRelease, "--namespace", ns, "--wait") })
	workload := moveRow(t, runAnalyze(t, "analyze-webhook-before", "--top", "1000", "--driver-read-as=driver"), ns)
	predicted := workload.DriverAdded.Sum().Watches
	if workload.Pods != 1 || workload.Volumes != 2 || workload.ClearsFindings != 1 || predicted != 2 {
		t.Errorf("move-to-driver's row for the Deployment %+v; want 1 pod, 2 volumes, 1 subPath finding cleared, 2 driver watches (2 ConfigMaps on 1 node)", workload)
	}

	if err := patchLabel(clientset.CoreV1().Namespaces(), ns, podrefs.ServeLabel, podrefs.ServeEnabled); err != nil {
		t.Fatal(err)
	}
	pod := rolloutRestart(t, ns)
	checkConverted(t, pod)
	var counted auditlog.Counts
	eventually(t, 30*time.Second, "the driver's watches in the audit log", func() string {
		c := auditTallyIn(t, auditlog.Window{}, ns).Counts["configmaps"][csiUser]
		counted = c
		if c.OpenWatches != predicted || c.Gets() != 0 {
			return fmt.Sprintf("%d open and %d GETs; analyze predicted %d watches and no GET", c.OpenWatches, c.Gets(), predicted)
		}
		return ""
	})

	table := webhookUpdatesWhileRenewing(t, ns, pod)
	table.Rows = append([][]string{{"the driver's watches: analyze's move-to-driver before, the audit log after",
		fmt.Sprintf("%d predicted", predicted), fmt.Sprintf("%d open", counted.OpenWatches), fmt.Sprintf("%d GETs", counted.Gets())}}, table.Rows...)
	t.Run("webhook down", func(t *testing.T) { webhookDown(t, ns) })
	writeDocTable(t, "csi-webhook", table)
}

// moveRow is analyze's move-to-driver row for the chart's Deployment.
func moveRow(t *testing.T, r analyze.Result, ns string) analyze.MoveGroup {
	t.Helper()
	for _, w := range r.WhatIfs {
		for _, g := range w.Workloads {
			if g.Namespace == ns && g.Workload == "Deployment/"+webappRelease {
				return g
			}
		}
	}
	t.Fatalf("no move-to-driver row for %s Deployment/%s among %+v", ns, webappRelease, r.WhatIfs)
	return analyze.MoveGroup{}
}

// rolloutRestart restarts the chart's Deployment as kubectl rollout
// restart does, and returns its one new pod once it runs and the old one
// is gone.
func rolloutRestart(t *testing.T, ns string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	old, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339))
	if _, err := clientset.AppsV1().Deployments(ns).Patch(ctx, webappRelease, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	eventually(t, 2*time.Minute, "the restarted Deployment's one pod", func() string {
		pods, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		if len(pods.Items) != 1 || !allRunning(&pods.Items[0]) ||
			slices.ContainsFunc(old.Items, func(p corev1.Pod) bool { return p.UID == pods.Items[0].UID }) {
			return fmt.Sprintf("%d pods, not yet one new one running", len(pods.Items))
		}
		pod = &pods.Items[0]
		return ""
	})
	return pod
}

// allRunning says whether every container of pod runs.
func allRunning(pod *corev1.Pod) bool {
	return len(pod.Status.ContainerStatuses) == len(pod.Spec.Containers) && !slices.ContainsFunc(pod.Status.ContainerStatuses,
		func(s corev1.ContainerStatus) bool { return s.State.Running == nil }) && pod.DeletionTimestamp == nil
}

// checkConverted requires both of pod's configMap volumes to be the
// driver's, inPlace where the server mounts a key with subPath.
func checkConverted(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if got := pod.Annotations[podrefs.ConvertedAnnotation]; got == "" {
		t.Fatalf("pod %s was not converted at admission (no %s annotation)", pod.Name, podrefs.ConvertedAnnotation)
	}
	want := map[string]string{"config": "inPlace", "site": ""}
	for _, v := range pod.Spec.Volumes {
		if _, ok := want[v.Name]; !ok {
			continue
		}
		if v.CSI == nil || v.CSI.Driver != csiDriver || v.CSI.VolumeAttributes["updates"] != want[v.Name] {
			t.Errorf("pod %s's volume %s: %+v; want the driver's, updates %q", pod.Name, v.Name, v.VolumeSource, want[v.Name])
		}
	}
}

// waitWebhookReady waits until replicas webhook pods are ready and the
// webhook configuration carries a caBundle.
func waitWebhookReady(t *testing.T, replicas int32) {
	t.Helper()
	eventually(t, 2*time.Minute, "the webhook ready", func() string {
		d, err := clientset.AppsV1().Deployments(csiNamespace).Get(context.Background(), webhookName, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if d.Status.ReadyReplicas != replicas || d.Status.Replicas != replicas {
			return fmt.Sprintf("%d of %d ready, %d in all", d.Status.ReadyReplicas, replicas, d.Status.Replicas)
		}
		c, err := clientset.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), webhookName, metav1.GetOptions{})
		if err != nil || len(c.Webhooks) == 0 || len(c.Webhooks[0].ClientConfig.CABundle) == 0 {
			return fmt.Sprintf("no caBundle yet (%v)", err)
		}
		return ""
	})
}

// scaleWebhook sets the webhook Deployment's replicas.
func scaleWebhook(t *testing.T, replicas int32) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if _, err := clientset.AppsV1().Deployments(csiNamespace).Patch(context.Background(), webhookName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// webhookDown scales the webhook to nothing, scales the chart's
// Deployment up by one, and requires the new pod to start unconverted and
// analyze to report it; then the webhook comes back.
func webhookDown(t *testing.T, ns string) {
	scaleWebhook(t, 0)
	t.Cleanup(func() { scaleWebhook(t, 2); waitWebhookReady(t, 2) })
	eventually(t, time.Minute, "the webhook's pods gone", func() string {
		pods, err := clientset.CoreV1().Pods(csiNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=nodeagent-webhook"})
		if err != nil || len(pods.Items) > 0 {
			return fmt.Sprintf("%d left (%v)", len(pods.Items), err)
		}
		return ""
	})
	before := time.Now()
	if _, err := clientset.AppsV1().Deployments(ns).Patch(context.Background(), webappRelease, types.MergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var unconverted *corev1.Pod
	eventually(t, 2*time.Minute, "a new pod running without the webhook", func() string {
		pods, err := clientset.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		for i, p := range pods.Items {
			if !p.CreationTimestamp.Time.Before(before.Truncate(time.Second)) && allRunning(&p) {
				unconverted = &pods.Items[i]
				return ""
			}
		}
		return fmt.Sprintf("none of %d pods new and running", len(pods.Items))
	})
	if _, ok := unconverted.Annotations[podrefs.ConvertedAnnotation]; ok || unconverted.Spec.Volumes[0].ConfigMap == nil {
		t.Errorf("pod %s was converted with the webhook down: %+v", unconverted.Name, unconverted.Spec.Volumes)
	}
	r := runAnalyze(t, "analyze-webhook-down")
	var found []string
	for _, f := range r.Findings {
		if f.Type == analyze.NotConverted && f.Pod == ns+"/"+unconverted.Name {
			found = append(found, f.Object.Name)
		}
	}
	slices.Sort(found)
	if want := []string{webappRelease + "-config", webappRelease + "-site"}; !slices.Equal(found, want) {
		t.Errorf("analyze's notConverted findings for %s: %v, want %v", unconverted.Name, found, want)
	}
}

// webhookUpdateFiles are the files of pod's containers that csiWithoutEditing
// measures: the server's subPath file and site volume, the sidecar's
// whole-ConfigMap volume.
func webhookUpdateFiles(t *testing.T, pod *corev1.Pod) []e2eutil.DelayFile {
	t.Helper()
	server, sidecar := viewContainerNamed(t, pod, "server").rootFromHost(t), viewContainerNamed(t, pod, "reloader").rootFromHost(t)
	return []e2eutil.DelayFile{
		{Group: "server: subPath file (config)", Object: 0, Path: filepath.Join(server, "etc/webapp", e2eutil.DelayValueKey)},
		{Group: "server: volume (site)", Object: 1, Path: filepath.Join(server, "usr/share/webapp", e2eutil.DelayValueKey)},
		{Group: "reloader: volume (config)", Object: 0, Path: filepath.Join(sidecar, "etc/webapp-config", e2eutil.DelayValueKey)},
	}
}

// webhookUpdatesWhileRenewing updates both ConfigMaps for webhookWindow
// while pods are admitted through the webhook every half second (server
// side dry runs: the webhook converts them as it would real ones) and the
// webhook's Secret is watched for renewals, and returns the docs' table.
func webhookUpdatesWhileRenewing(t *testing.T, ns string, pod *corev1.Pod) report.Table {
	t.Helper()
	admissions := startAdmissions(ns)
	run := e2eutil.DelayRun{Client: clientset, Namespace: ns, Objects: []string{webappRelease + "-config", webappRelease + "-site"},
		Window: webhookWindow, MeanGap: webhookMeanGap, Poll: csiPoll, Longest: 10 * time.Second}
	delays, _, err := run.Measure(context.Background(), webhookUpdateFiles(t, pod))
	if err != nil {
		admissions.stop()
		t.Fatal(err)
	}
	// The run outlasts a CA's renewal period; the admissions go on until
	// the Secret has shown one, and two of the certificate.
	eventually(t, 90*time.Second, "a CA renewal and two certificate renewals", func() string {
		if cas, certs := admissions.renewals(); cas < 2 || certs < 3 {
			return fmt.Sprintf("%d CAs and %d certificates seen", cas, certs)
		}
		return ""
	})
	a := admissions.stop()
	table := report.Table{Header: []string{"file", "delays", "median", "longest"}}
	for _, file := range slices.Sorted(maps.Keys(delays)) {
		d := slices.Sorted(slices.Values(delays[file]))
		longest := d[len(d)-1]
		table.Rows = append(table.Rows, []string{file, fmt.Sprint(len(d)), seconds(model.Quantile(d, 0.5)), seconds(longest)})
		if longest > 1 {
			t.Errorf("%s: an update took %.2f s, over a second", file, longest)
		}
	}
	t.Logf("admissions: %s", a)
	if a.refused > 0 || a.unconverted > 0 || a.converted < 50 {
		t.Errorf("admissions during the run: %s; want none refused or unconverted through a CA renewal and two certificate renewals", a)
	}
	table.Rows = append(table.Rows, []string{"pods admitted meanwhile", fmt.Sprintf("%d converted, %d unconverted, %d refused", a.converted, a.unconverted, a.refused),
		fmt.Sprintf("%d CAs", len(a.cas)), fmt.Sprintf("%d serving certificates", len(a.certs))})
	return table
}
