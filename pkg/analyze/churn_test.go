package analyze

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// A CronJob every minute whose runs (three finished, one running) each
// lived 20 s and read a ConfigMap no pod that stays reads, beside a
// Deployment whose pod was made five minutes ago: the CronJob arrives once
// a minute, its churn is a quorum GET per arrival after #120255 and a
// watch per arrival under Watch, the driver's cost of it is its watch
// opens, and the Deployment, new or rolled, is no churn.
func TestChurnOfACronJob(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	jobPod := podrefs.Refs{Volumes: []podrefs.Volume{cm("backup-config")}}
	for _, strategy := range []model.Strategy{model.StrategyCache, model.StrategyWatch} {
		c := oneNode("1.37.2", strategy, time.Minute, time.Minute, podrefs.Refs{Volumes: []podrefs.Volume{cm("web-config")}})
		c.Inventory.Pods[0].Workload, c.Inventory.Pods[0].Created = "Deployment/web", now.Add(-5*time.Minute)
		for i := range 3 {
			created := now.Add(-time.Duration(3-i) * time.Minute)
			c.Inventory.Finished = append(c.Inventory.Finished, inventory.FinishedPod{Namespace: "ns", Name: fmt.Sprintf("backup-2941000%d-x", i), Node: "node",
				Workload: fmt.Sprintf("Job/backup-2941000%d", i), Refs: jobPod, Created: created, Ended: created.Add(20 * time.Second)})
		}
		c.Inventory.Pods = append(c.Inventory.Pods, inventory.PodInfo{Namespace: "ns", Name: "backup-now", Node: "node",
			Workload: "Job/backup-29410003", Refs: jobPod, Created: now})
		c.Inventory.AddObject(model.ConfigMap, "ns", "backup-config", false)
		r := Predict(c.WithArrivals(SightingsOf(c.Inventory), now, DefaultArrivalWindow), 10)
		if r.Churn == nil || len(r.Churn.Workloads) != 1 {
			t.Fatalf("%s: churn %+v, want the CronJob's alone", strategy, r.Churn)
		}
		w := r.Churn.Workloads[0]
		if w.Workload != "CronJob/backup" || math.Abs(w.ArrivalsPerSecond-1.0/60) > 1e-9 || w.LifetimeSeconds != 20 {
			t.Errorf("%s: %+v, want CronJob/backup arriving once a minute, 20 s each", strategy, w)
		}
		lambda := 1.0 / 60
		opens := lambda * math.Exp(-lambda*(20+model.ReleaseDelay.Seconds()))
		near(t, string(strategy)+": with the driver, watch opens", w.WithDriver.WatchOpens, opens)
		// The run there now is one of the arrivals, not a pod that stays.
		switch strategy {
		case model.StrategyCache:
			near(t, "Cache: quorum GETs", w.Predicted.QuorumGets, lambda/(1+lambda*model.ArrivalMountDelay.Seconds()))
		case model.StrategyWatch:
			near(t, "Watch: watch opens", w.Predicted.WatchOpens, opens)
		}
		if r.Nodes[0].Pods != 1 {
			t.Errorf("%s: %d pods that stay, want the Deployment's alone", strategy, r.Nodes[0].Pods)
		}
		if r.Churn.Predicted != w.Predicted {
			t.Errorf("%s: churn in all %+v, want the CronJob's %+v", strategy, r.Churn.Predicted, w.Predicted)
		}
		var text strings.Builder
		if err := r.WriteText(&text, 10); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Pods that come and go, in the last 1h0m0s", "CronJob/backup", "of which churn GET/s"} {
			if !strings.Contains(text.String(), want) {
				t.Errorf("%s: the report lacks %q:\n%s", strategy, want, text.String())
			}
		}
		if strategy == model.StrategyCache {
			t.Logf("the report:\n%s", text.String())
		}
	}
}

// Moving a CronJob whose pods come and go to the driver moves its arrivals
// too, including the runs that finished: the kubelet's GETs for them go,
// and the driver opens a watch for each run that finds none on its node.
func TestMoveToDriverMovesArrivals(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	jobPod := podrefs.Refs{Volumes: []podrefs.Volume{cm("backup-config")}}
	moving := []inventory.UnconvertedVolume{{Volume: "backup-config"}}
	c := oneNode("1.37.2", model.StrategyCache, time.Minute, time.Minute)
	for i := range 3 {
		created := now.Add(-time.Duration(3-i) * time.Minute)
		c.Inventory.Finished = append(c.Inventory.Finished, inventory.FinishedPod{Namespace: "ns", Name: fmt.Sprintf("backup-2941000%d-x", i), Node: "node",
			Workload: fmt.Sprintf("Job/backup-2941000%d", i), Refs: jobPod, Created: created, Ended: created.Add(20 * time.Second), Unconverted: moving})
	}
	c.Inventory.AddObject(model.ConfigMap, "ns", "backup-config", false)
	c.Inventory.DriverNodesListed = false // every node is taken to have the driver
	r := Predict(c.WithArrivals(SightingsOf(c.Inventory), now, DefaultArrivalWindow), 10)
	var move *WhatIf
	for i := range r.WhatIfs {
		if r.WhatIfs[i].Name == "move-to-driver" {
			move = &r.WhatIfs[i]
		}
	}
	if move == nil {
		t.Fatal("no move-to-driver what-if")
	}
	lambda := 1.0 / 60
	got := move.Predicted.Sum().Churn
	if got.APIServerGets != 0 {
		t.Errorf("move-to-driver: %.4f churn GET/s, want none: the runs' volumes are the driver's", got.APIServerGets)
	}
	near(t, "move-to-driver: the driver's watch opens", got.WatchOpens, lambda*math.Exp(-lambda*(20+model.ReleaseDelay.Seconds())))
	if now := r.Total.Predicted.Sum().Churn; now.APIServerGets == 0 || now.WatchOpens != 0 {
		t.Errorf("now: churn %+v, want the kubelet's GETs and no watch", now)
	}
}

// A Job of six pods made within two seconds, and a CronJob whose runs
// each make two: the Job's pods are six arrivals over the window, however
// close together they came (not five in two seconds); the CronJob's, two
// a run at its runs' spacing.
func TestArrivalRatesOfBurstsAndRuns(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	const window = 10 * time.Minute
	refs := podrefs.Refs{Volumes: []podrefs.Volume{cm("batch-config")}}
	c := oneNode("1.37.2", model.StrategyCache, time.Minute, time.Minute)
	c.Inventory.AddObject(model.ConfigMap, "ns", "batch-config", false)
	finished := func(name, workload string, created time.Time) inventory.FinishedPod {
		return inventory.FinishedPod{Namespace: "ns", Name: name, Node: "node", Workload: workload, Refs: refs,
			Created: created, Ended: created.Add(10 * time.Second)}
	}
	for i := range 6 {
		c.Inventory.Finished = append(c.Inventory.Finished,
			finished(fmt.Sprintf("burst-%d", i), "Job/burst", now.Add(-5*time.Minute+time.Duration(i)*400*time.Millisecond)))
	}
	for run := range 3 {
		for i := range 2 {
			c.Inventory.Finished = append(c.Inventory.Finished, finished(fmt.Sprintf("report-%d-%d", run, i),
				fmt.Sprintf("Job/report-2941000%d", run), now.Add(-time.Duration(3-run)*2*time.Minute+time.Duration(i)*time.Second)))
		}
	}
	r := Predict(c.WithArrivals(SightingsOf(c.Inventory), now, window), 10)
	want := map[string]float64{"Job/burst": 6 / window.Seconds(), "CronJob/report": 2 / 120.0}
	if r.Churn == nil || len(r.Churn.Workloads) != 2 || r.Churn.WindowSeconds != window.Seconds() {
		t.Fatalf("churn %+v, want the Job's and the CronJob's over %s", r.Churn, window)
	}
	for _, w := range r.Churn.Workloads {
		near(t, w.Workload+": arrivals/s", w.ArrivalsPerSecond, want[w.Workload])
	}
}

// A Job's pods that a busy node started 3 s after their creation, half of
// them finishing within the second they started and half a second later,
// are synced again 1.5 times each on average (the sync the relist during
// their start queued, and for half of them the relist that saw them
// run), and under Cache at T = 0 each resync refreshes each object: the
// churn is the quorum fetches plus λ·1.5. A Job whose pods say no start
// is taken to start at once and run its lifetime: one resync.
func TestResyncsOfSlowStarts(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	const window = 10 * time.Minute
	refs := podrefs.Refs{Volumes: []podrefs.Volume{cm("batch-config")}}
	c := oneNode("1.37.2", model.StrategyCache, time.Minute, 0)
	c.Inventory.AddObject(model.ConfigMap, "ns", "batch-config", false)
	for i := range 8 {
		created := now.Add(-5*time.Minute + time.Duration(i)*time.Second)
		started := created.Add(3 * time.Second)
		c.Inventory.Finished = append(c.Inventory.Finished, inventory.FinishedPod{Namespace: "ns", Name: fmt.Sprint("slow-", i), Node: "node",
			Workload: "Job/slow", Refs: refs, Created: created, Started: started, Ended: started.Add(time.Duration(i%2) * time.Second)})
		c.Inventory.Finished = append(c.Inventory.Finished, inventory.FinishedPod{Namespace: "ns", Name: fmt.Sprint("unsaid-", i), Node: "node",
			Workload: "Job/unsaid", Refs: refs, Created: created, Ended: created.Add(10 * time.Second)})
	}
	r := Predict(c.WithArrivals(SightingsOf(c.Inventory), now, window), 10)
	if r.Churn == nil || len(r.Churn.Workloads) != 2 {
		t.Fatalf("churn %+v, want both Jobs'", r.Churn)
	}
	lambda := 8 / window.Seconds()
	want := map[string]float64{"Job/slow": 1.5, "Job/unsaid": 1}
	for _, w := range r.Churn.Workloads {
		near(t, w.Workload+": resyncs", w.Resyncs, want[w.Workload])
		// Each Job alone: the other's arrivals share the entry in the
		// node's total, not in the Job's row.
		fetches := lambda / (1 + lambda*model.ArrivalMountDelay.Seconds())
		near(t, w.Workload+": GET/s at T = 0", w.Predicted.APIServerGets, fetches+lambda*want[w.Workload])
	}
}
