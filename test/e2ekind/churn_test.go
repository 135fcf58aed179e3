//go:build e2e

package e2ekind

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/pkg/auditlog"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// Pods that come and go, as a real cluster's batch work does: a CronJob
// every minute (its schedule names the window's two minutes) whose runs make cronPods pods each, and one Job of
// burstPods pods made at once. Their pods run `nodeagent version` from
// the agent's image (on every node already) and finish within seconds.
const (
	cronPods  = 4
	burstPods = 12
	// churnWindow holds two of the CronJob's runs and the burst: it
	// starts churnLead before a minute's mark, and the burst comes
	// burstAfter into it.
	churnWindow = 2 * time.Minute
	churnLead   = 20 * time.Second
	burstAfter  = 40 * time.Second
)

// churn is the namespace of the pods that come and go, and its CronJob's
// first run's mark.
type churn struct {
	ns        string
	firstMark time.Time
}

// startChurn makes the churn's namespace, the ConfigMap its pods mount and
// the CronJob, whose two runs are at the first minute's mark at least
// churnLead plus a few seconds away (the window starts churnLead before it)
// and the mark after it.
func startChurn(t *testing.T) churn {
	t.Helper()
	ctx := context.Background()
	c := churn{ns: testNamespace(t, "e2e-kind-churn")}
	if _, err := clientset.CoreV1().ConfigMaps(c.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "batch-config"},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.firstMark = time.Now().UTC().Add(churnLead + 5*time.Second).Truncate(time.Minute).Add(time.Minute)
	// Its schedule names the window's two minutes alone: "every minute"
	// would also run at a mark closer than churnLead, before the window.
	second := c.firstMark.Add(time.Minute)
	cron := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "every-minute"}, Spec: batchv1.CronJobSpec{
		Schedule: fmt.Sprintf("%d,%d %d,%d * * *", c.firstMark.Minute(), second.Minute(), c.firstMark.Hour(), second.Hour()),
		TimeZone: ptr.To("Etc/UTC"), JobTemplate: batchv1.JobTemplateSpec{Spec: churnJobSpec(cronPods)}}}
	if _, err := clientset.BatchV1().CronJobs(c.ns).Create(ctx, cron, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// churnJobSpec is a Job of n pods at once, each mounting batch-config.
func churnJobSpec(n int32) batchv1.JobSpec {
	return batchv1.JobSpec{Parallelism: ptr.To(n), Completions: ptr.To(n), BackoffLimit: ptr.To[int32](0),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "run", Image: agentImage, Args: []string{"version"},
				VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/config"}}}},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "batch-config"}}}}},
		}}}
}

// check measures the churn over its window, the burst made in it, and
// holds analyze's predicted churn of the namespace (the kubelets' GETs for
// its pods, under their Cache strategy) to what the audit log counts of
// the kubelets' GETs there: at most 10 % fewer, at most 20 % more. Each
// pod's GETs depend on how many relists of the kubelet's PLEG fell while
// its first sync started it and while its container ran (a busy node adds
// one): analyze reads both spans from the finished pods
// (model.PLEGResyncs). On a miss it logs each node's timeline of pods
// and GETs. analyze's window starts where the measurement's does: the
// burst's rate is its pods over that window, the CronJob's its
// schedule's, two runs over churnWindow.
func (c churn) check(t *testing.T, syncFrequency time.Duration) {
	t.Helper()
	ctx := context.Background()
	from := c.firstMark.Add(-churnLead)
	time.Sleep(time.Until(from.Add(burstAfter)))
	burst := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "burst"}, Spec: churnJobSpec(burstPods)}
	if _, err := clientset.BatchV1().Jobs(c.ns).Create(ctx, burst, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(from.Add(churnWindow)))
	// Suspended, not deleted: its Jobs and their pods would go with it.
	if _, err := clientset.BatchV1().CronJobs(c.ns).Patch(ctx, "every-minute", types.MergePatchType,
		[]byte(`{"spec":{"suspend":true}}`), metav1.PatchOptions{}); err != nil {
		t.Error(err)
	}
	pods := c.waitFinished(t, from)
	analyzed := time.Now()
	r := runAnalyze(t, "analyze-churn", "--churn-window="+analyzed.Sub(from).Round(time.Millisecond).String())
	checkSettings(t, r, model.StrategyCache, syncFrequency)
	if r.Churn == nil {
		t.Fatalf("analyze found no churn (warnings %q)", r.Warnings)
	}
	predicted, rows := c.predicted(r, map[string]time.Duration{"CronJob/every-minute": churnWindow, "Job/burst": analyzed.Sub(from)})
	to := time.Now()
	audited := c.kubeletGets(t, from, to)
	t.Logf("churn of %s: predicted %.1f kubelet GETs, audited %d", c.ns, predicted, audited)
	rows.Rows = append(rows.Rows, []string{"all, audited", "", "", "", "", fmt.Sprint(audited)})
	writeDocTable(t, "analyze-churn", rows)
	if got := float64(audited); len(rows.Rows) != 3 || got < 0.9*predicted || got > 1.2*predicted {
		t.Errorf("the churn's kubelet GETs: audited %d, predicted %.1f for %d workloads: want both workloads, at most 10 %% fewer or 20 %% more",
			audited, predicted, len(rows.Rows)-1)
		c.logTimeline(t, pods, from, to)
	}
}

// predicted is analyze's churn of the namespace in GETs, each workload's
// rate over its window in over, and the table of it for the docs.
func (c churn) predicted(r analyze.Result, over map[string]time.Duration) (float64, report.Table) {
	var predicted float64
	rows := report.Table{Header: []string{"workload", "arrivals/min", "each stays (s)", "resyncs each", "GET/s predicted", "GETs predicted"}}
	for _, w := range r.Churn.Workloads {
		if w.Namespace == c.ns {
			gets := w.Predicted.APIServerGets * over[w.Workload].Seconds()
			predicted += gets
			rows.Rows = append(rows.Rows, []string{w.Workload, fmt.Sprintf("%.1f", w.ArrivalsPerSecond*60), fmt.Sprintf("%.1f", w.LifetimeSeconds),
				fmt.Sprintf("%.2f", w.Resyncs), fmt.Sprintf("%.3f", w.Predicted.APIServerGets), fmt.Sprintf("%.1f", gets)})
		}
	}
	return predicted, rows
}

// waitFinished waits until every pod of the churn has finished, two runs
// of the CronJob and the burst, all made after from, and returns them.
func (c churn) waitFinished(t *testing.T, from time.Time) []corev1.Pod {
	t.Helper()
	var finishedPods []corev1.Pod
	eventually(t, 2*time.Minute, "the churn's pods finished", func() string {
		pods, err := clientset.CoreV1().Pods(c.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		finished, early := 0, 0
		for _, p := range pods.Items {
			if p.CreationTimestamp.Time.Before(from) {
				early++
			}
			if p.Status.Phase == corev1.PodSucceeded {
				finished++
			}
		}
		if want := 2*cronPods + burstPods; len(pods.Items) != want || finished != want || early > 0 {
			return fmt.Sprintf("%d pods, %d of them finished and %d made before the window; want %d, all finished", len(pods.Items), finished, early, want)
		}
		finishedPods = pods.Items
		return ""
	})
	return finishedPods
}

// kubeletGets counts the kubelets' ConfigMap and Secret GETs in the
// churn's namespace from from to to, from the audit log.
func (c churn) kubeletGets(t *testing.T, from, to time.Time) int {
	t.Helper()
	tally := auditTallyIn(t, auditlog.Window{From: from, To: to}, c.ns)
	gets := 0
	for _, resource := range []string{"configmaps", "secrets"} {
		for user, counts := range tally.Counts[resource] {
			if strings.HasPrefix(user, "system:node:") {
				gets += counts.Gets()
			}
		}
	}
	return gets
}

// logTimeline logs, node by node, the churn's pods (when each was made,
// its sandbox ready, its container started and finished) among the
// kubelets' GETs in its namespace, all as seconds from from: what a
// count that misses the model's is made of.
func (c churn) logTimeline(t *testing.T, pods []corev1.Pod, from, to time.Time) {
	t.Helper()
	lines := map[string][]string{}
	at := func(when time.Time) string { return fmt.Sprintf("%7.2f", when.Sub(from).Seconds()) }
	for _, p := range pods {
		lines[p.Spec.NodeName] = append(lines[p.Spec.NodeName], at(p.CreationTimestamp.Time)+" made   "+p.Name)
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReadyToStartContainers && cond.Status == corev1.ConditionTrue {
				lines[p.Spec.NodeName] = append(lines[p.Spec.NodeName], at(cond.LastTransitionTime.Time)+" sandbox "+p.Name)
			}
		}
		for _, s := range p.Status.ContainerStatuses {
			if term := s.State.Terminated; term != nil {
				lines[p.Spec.NodeName] = append(lines[p.Spec.NodeName], at(term.StartedAt.Time)+" started "+p.Name,
					at(term.FinishedAt.Time)+" finished "+p.Name)
			}
		}
	}
	for _, g := range c.auditGets(t, from, to) {
		if node, ok := strings.CutPrefix(g.User, "system:node:"); ok && g.Namespace == c.ns {
			lines[node] = append(lines[node], fmt.Sprintf("%s GET    %s quorum=%v", at(g.Received), g.Name, g.Quorum))
		}
	}
	for node, l := range lines {
		sort.Strings(l)
		t.Logf("%s:\n%s", node, strings.Join(l, "\n"))
	}
}

// auditGets is the control plane's audit log's ConfigMap GETs from from to to.
func (c churn) auditGets(t *testing.T, from, to time.Time) []auditlog.Get {
	t.Helper()
	gets, err := auditlog.Gets(copyAuditLog(t), from, to)
	if err != nil {
		t.Log(err)
	}
	return gets
}
