//go:build e2e

package e2e

import (
	"context"
	"math"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/pkg/compare"
	"github.com/nodeagent-io/nodeagent/pkg/compare/inprocess"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/compare/objects"
)

// compare --pod-churn: pods arrive and leave on every node through each
// window, and the model's churn term for the arrivals that happened holds
// what the agents sent: after #120255 a quorum GET per arrival's fetch
// (the steady refreshes go to the watch cache), and under Watch a watch
// per arrival that finds its ConfigMap unwatched. The bounds are three
// standard deviations of the arrivals' randomness at this size; the record
// pod-churn holds the model to 5 % at twenty nodes, beside the kubelets.
func TestComparePodChurn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := compare.DefaultScenario()
	s.Nodes, s.PodsPerNode, s.SyncFrequency, s.TTL = 4, 3, 2*time.Second, 6*time.Second
	s.PhaseDuration, s.Modes = 20*time.Second, []modes.Mode{modes.FirstReference, modes.Watch}
	s.PodChurn, s.PodLifetime, s.ChurnConfigMaps = 3, time.Second, 6
	agents, err := inprocess.New(inprocess.Options{RESTConfig: cp.RESTConfig(), ActAsNodes: true})
	if err != nil {
		t.Fatal(err)
	}
	const namespace = "compare-churn"
	report, err := compare.Run(ctx, compare.Options{
		Scenario: s, Agents: agents, RESTConfig: cp.RESTConfig(), APIServer: "e2e", OutputDir: t.TempDir(),
		Namespace: namespace, AuditLog: cp.AuditLogPath(),
	})
	if err != nil {
		t.Fatal(err)
	}
	within := func(what string, got, want, tolerance float64) {
		t.Helper()
		if want <= 0 || math.Abs(got-want) > tolerance*want {
			t.Errorf("%s: measured %.2f/s, model %.2f/s: want within %.0f %%", what, got, want, 100*tolerance)
			return
		}
		t.Logf("%s: measured %.2f/s, model %.2f/s", what, got, want)
	}
	for _, p := range report.Phases {
		c := p.Churn
		if c == nil || c.Failed != 0 {
			t.Fatalf("%s: churn %+v, want arrivals and no failure", p.Mode, c)
		}
		// 4 nodes × 3 a second.
		if c.ArrivalQPS < 8 || c.ArrivalQPS > 16 {
			t.Errorf("%s: %.2f arrivals/s, want about 12", p.Mode, c.ArrivalQPS)
		}
		switch p.Mode {
		case modes.FirstReference:
			within("first-reference: etcd gets", p.EtcdGetQPS, p.ExpectedEtcdQPS, 0.15)
			within("first-reference: apiserver GETs", p.APIServerGetQPS, p.ExpectedAPIServerQPS, 0.15)
		case modes.Watch:
			if c.WatchOpenQPS == nil {
				t.Fatal("watch: no watch opens measured")
			}
			within("watch: watch opens", *c.WatchOpenQPS, c.ExpectedWatchOpenQPS, 0.25)
		}
	}
	// Each phase leaves none of its arriving pods behind it.
	left, err := clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: objects.ArrivingSelector(namespace)})
	if err == nil && len(left.Items) > 0 {
		t.Errorf("%d arriving pods left after the run", len(left.Items))
	}
}
