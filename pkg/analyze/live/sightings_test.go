package live

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/analyze"
)

// jobPod is run i of Job name's one pod on node, created at created.
func jobPod(name string, i int, node string, created time.Time) *corev1.Pod {
	p := podReading(fmt.Sprintf("%s-%d", name, i), node, "batch-config", "env")
	p.CreationTimestamp = metav1.NewTime(created)
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: name, Controller: ptr.To(true)}}
	return p
}

// A Job whose pods are deleted as they finish (ttlSecondsAfterFinished:
// 0) shows the one-shot nothing, and `--serve` every pod it saw: the churn
// counts the pods that came and went, their lifetime from the deletions,
// their resyncs from their containers' start and end (started 3 s after
// their creation, run 2 s: two each), and the analysis updated as they
// went holds what one made afresh from the same sightings would.
func TestServeCountsPodsDeletedAsTheyFinish(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(node("n1"), node("n2"),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "batch-config"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "env"}})
	o := analyze.DefaultOptions()
	o.ReadConfigz, o.ArrivalWindow = false, 10*time.Minute
	a := runAnalyzer(t, client, Options{Analyze: o, Quiet: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond})
	if a.Report().Churn != nil {
		t.Fatalf("churn %+v before any pod came", a.Report().Churn)
	}
	pods := client.CoreV1().Pods("shop")
	const runs = 4
	for i := range runs {
		p := jobPod("batch", i, []string{"n1", "n2"}[i%2], time.Now())
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p.Status.Phase = corev1.PodSucceeded
		started := metav1.NewTime(p.CreationTimestamp.Add(3 * time.Second))
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			StartedAt: started, FinishedAt: metav1.NewTime(started.Add(2 * time.Second))}}}}
		if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Every pod seen, and every deletion: a report made between the last
	// pod's creation and its deletion still counts it among the pods that
	// stay.
	testutil.WaitFor(t, "the Job's churn in the report, and no pod that stays", func() bool {
		r := a.Report()
		c := r.Churn
		return c != nil && len(c.Workloads) == 1 && math.Abs(c.Workloads[0].ArrivalsPerSecond-runs/o.ArrivalWindow.Seconds()) < 1e-9 && r.Cluster.Pods == 0
	})
	w := a.Report().Churn.Workloads[0]
	if w.Workload != "Job/batch" || w.Nodes != 2 || w.Predicted.WatchOpens == 0 || w.Resyncs != 2 {
		t.Errorf("churn %+v, want Job/batch on two nodes opening watches (the kubelets' Watch strategy), resynced twice each", w)
	}
	// Made afresh from what the analyzer holds, the same result, once the
	// analyzer has computed after the last event it took in (a report
	// can be one computation behind the sightings: a pod's last events
	// may land after the report above).
	testutil.Eventually(t, time.Millisecond, 10*time.Second, func() error {
		c := analyze.Cluster{Inventory: a.held.inv, Settings: a.settings}.WithArrivals(a.watcher.sightings.current(), time.Now(), o.ArrivalWindow)
		fresh, held := analyze.Predict(c, o.Top).Churn, a.Report().Churn
		if fresh == nil || fresh.Predicted != held.Predicted {
			return fmt.Errorf("afresh: churn %+v, the analyzer's %+v", fresh, held)
		}
		return nil
	})
}
