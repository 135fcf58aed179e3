//go:build e2e

package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
)

// soakConfigMaps is how many ConfigMaps the soak's pods choose from.
const soakConfigMaps = 6

// TestSoak runs for $NODEAGENT_SOAK_DURATION (`make soak SOAK_DURATION=30m`;
// skipped without it): pods come and go, ConfigMaps change, and faults from
// the rest of the suite strike at random (SIGKILL of the agent, apiserver
// restarts, network toxics). Then everything stops, and once quiet the
// invariants are checked: every pod's volumes hold what the API says, no
// directory is left for a pod that is gone, and the agent holds no more
// watches, goroutines or open files than it needs. $NODEAGENT_SOAK_SEED
// replays a run's choices.
func TestSoak(t *testing.T) {
	duration, err := time.ParseDuration(os.Getenv("NODEAGENT_SOAK_DURATION"))
	if err != nil || duration <= 0 {
		t.Skip("skipped: set NODEAGENT_SOAK_DURATION (make soak SOAK_DURATION=30m)")
	}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("NODEAGENT_SOAK_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("soak for %s, seed %d (NODEAGENT_SOAK_SEED=%d replays the choices)", duration, seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	ns := createNamespace(t, "soak")
	node := "node-soak"
	createNode(t, node, 2)
	proxy, kubeconfig := startFaultProxy(t, node)
	const keys, size = 3, 512
	gens := map[string]int{}
	for c := range soakConfigMaps {
		name := fmt.Sprintf("soak-%d", c)
		createConfigMap(t, ns, name, generationData(1, keys, size))
		gens[name] = 1
	}
	watchesBefore := configMapWatches(t)
	a := startAgentOpts(t, agentOptions{node: node, kubeconfig: kubeconfig, args: []string{"--configmap-strategy=Watch", "--sync-frequency=5s"}})
	pid := a.proc.Pid()
	pods := map[string]*corev1.Pod{}
	podSeq := 0
	newPod := func() {
		podSeq++
		name := fmt.Sprintf("app-%d", podSeq)
		pods[name] = createPod(t, ns, name, node, volume{name: "cfg", configMap: fmt.Sprintf("soak-%d", rng.IntN(soakConfigMaps))})
	}
	for range 20 {
		newPod()
	}
	actions := map[string]int{}
	deadline := time.Now().Add(duration)
	for lastReport := time.Now(); time.Now().Before(deadline); {
		switch n := rng.IntN(100); {
		case n < 30:
			name := fmt.Sprintf("soak-%d", rng.IntN(soakConfigMaps))
			gens[name]++
			updateData(t, ns, name, generationData(gens[name], keys, size))
			actions["ConfigMap update"]++
		case n < 50:
			newPod()
			actions["pod created"]++
		case n < 70 && len(pods) > 5:
			for name, p := range pods {
				deletePodNow(t, p)
				delete(pods, name)
				break
			}
			actions["pod deleted"]++
		case n < 76:
			a.stop(syscall.SIGKILL)
			a.start()
			pid = a.proc.Pid()
			actions["agent SIGKILLed"]++
		case n < 78:
			mustStart(t, cp.RestartAPIServer)
			actions["apiserver restarted"]++
		case n < 82:
			toxic := []string{
				`{"type":"latency","stream":"downstream","attributes":{"latency":500}}`,
				`{"type":"reset_peer","stream":"downstream","attributes":{"timeout":0}}`,
				`{"type":"timeout","stream":"downstream","attributes":{"timeout":2000}}`,
			}[rng.IntN(3)]
			remove := proxy.addToxic(t, toxic)
			time.Sleep(3 * time.Second)
			remove()
			actions["network toxic"]++
		}
		if t.Failed() {
			t.FailNow()
		}
		time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
		if time.Since(lastReport) > time.Minute {
			t.Logf("soak: %s left; %d pods; actions so far %v", time.Until(deadline).Round(time.Second), len(pods), actions)
			lastReport = time.Now()
		}
	}
	t.Logf("soak done: %v", actions)

	// Quiescence: the API's content on disk for every pod, nothing else.
	quiet := time.Now()
	testutil.Eventually(t, pollInterval, 3*time.Minute, func() error {
		for _, p := range pods {
			want := gens[p.Spec.Volumes[0].ConfigMap.Name]
			got, err := volumeGeneration(a.volumePath(p, "cfg", ""))
			if err != nil || got != want {
				return fmt.Errorf("pod %s: generation %d (%v), want %d", p.Name, got, err, want)
			}
		}
		entries, err := os.ReadDir(filepath.Join(a.rootDir, "pods"))
		if err != nil {
			return err
		}
		live := map[string]bool{}
		for _, p := range pods {
			live[string(p.UID)] = true
		}
		for _, e := range entries {
			if !live[e.Name()] {
				return fmt.Errorf("an orphan directory for pod %s", e.Name())
			}
		}
		return nil
	})
	converged := time.Since(quiet)
	t.Logf("converged %s after the soak", converged.Round(time.Millisecond))
	for _, p := range pods {
		if extra, err := leftovers(a.volumePath(p, "cfg", "")); err != nil || len(extra) > 0 {
			t.Errorf("pod %s: debris %v %v", p.Name, extra, err)
		}
	}

	// Leaks: one watch per ConfigMap in use, and the process's goroutines
	// and open files back to what a fresh agent with the same pods has.
	inUse := map[string]bool{}
	for _, p := range pods {
		inUse[p.Spec.Volumes[0].ConfigMap.Name] = true
	}
	// A ConfigMap no pod reads any more is unwatched after 5·S.
	var watches float64
	testutil.Eventually(t, pollInterval, 5*5*time.Second+30*time.Second, func() error {
		if watches = configMapWatches(t) - watchesBefore; watches != float64(len(inUse)) {
			return fmt.Errorf("%v ConfigMap watches open for %d ConfigMaps in use", watches, len(inUse))
		}
		return nil
	})
	m := a.metrics()
	goroutines, fds := m.Sum("go_goroutines", nil), m.Sum("process_open_fds", nil)
	a.stop(syscall.SIGTERM)
	a.start()
	testutil.Eventually(t, pollInterval, time.Minute, func() error {
		if w := configMapWatches(t) - watchesBefore; w != float64(len(inUse)) {
			return fmt.Errorf("%v ConfigMap watches after a fresh start, want %d", w, len(inUse))
		}
		return nil
	})
	time.Sleep(10 * time.Second)
	fresh := a.metrics()
	freshGoroutines, freshFDs := fresh.Sum("go_goroutines", nil), fresh.Sum("process_open_fds", nil)
	t.Logf("after the soak: %v ConfigMap watches for %d ConfigMaps in use, %v goroutines, %v open files (pid %d); a fresh agent: %v goroutines, %v open files",
		watches, len(inUse), goroutines, fds, pid, freshGoroutines, freshFDs)
	recordReliability(t, reliabilityRow{
		Fault:    fmt.Sprintf("soak for %s (seed %d): %v; then %v watches for %d ConfigMaps in use, %v goroutines and %v open files against a fresh agent's %v and %v", duration, seed, actions, watches, len(inUse), goroutines, fds, freshGoroutines, freshFDs),
		Strategy: "watch", DataLost: "none: every volume equal to the API after", Recovery: converged, Requests: "n/a",
	})
	if goroutines > 1.2*freshGoroutines+10 {
		t.Errorf("%v goroutines after the soak, %v in a fresh agent: a leak", goroutines, freshGoroutines)
	}
	if fds > freshFDs+5 {
		t.Errorf("%v open files after the soak, %v in a fresh agent: a leak", fds, freshFDs)
	}
}

// configMapWatches is the number of ConfigMap watches the apiserver holds
// open, from its own metric.
func configMapWatches(t *testing.T) float64 {
	t.Helper()
	return scrapeAPIServer(t).Sum("apiserver_longrunning_requests", map[string]string{"resource": "configmaps", "verb": "WATCH"})
}
