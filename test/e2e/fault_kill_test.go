//go:build e2e

package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// killRounds is how many times TestSIGKILLDuringUpdateStorm kills the agent.
const killRounds = 50

// TestSIGKILLDuringUpdateStorm kills the agent with SIGKILL at random
// moments while its ConfigMaps change many times a second, and restarts
// it, fifty times. Throughout, a reader checks every volume: no file it
// opens is half-written, no volume mixes two generations, no file
// vanishes. After each kill the debris a write in flight left (a partial
// generation, a stale ..data_tmp) is counted; after the storm every volume
// holds the API's last generation and no debris.
func TestSIGKILLDuringUpdateStorm(t *testing.T) {
	ns := createNamespace(t, "sigkill-storm")
	node := "node-sigkill-storm"
	createNode(t, node, 2)
	const keys, size = 4, 64 << 10
	names := []string{"storm-0", "storm-1", "storm-2", "storm-3"}
	for _, name := range names {
		createConfigMap(t, ns, name, generationData(1, keys, size))
	}
	a := startAgent(t, node, "--configmap-strategy=Watch", "--sync-frequency=2s")
	dirs := map[string][]string{}
	volumeOf := map[string]string{} // volume directory: its ConfigMap
	for i := range 8 {
		p := createPod(t, ns, fmt.Sprintf("app-%d", i), node, volume{name: "cfg", configMap: names[i%len(names)]})
		dir := a.volumePath(p, "cfg", "")
		dirs[dir], volumeOf[dir] = keyNames(keys), names[i%len(names)]
	}
	for dir := range dirs {
		waitForGeneration(t, dir, 1, 30*time.Second)
	}
	reader := startReader(dirs)
	storm := startStorm(t, ns, names, keys, size, 40, 4)

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 12))
	debris, readyTotal, readyMax := 0, time.Duration(0), time.Duration(0)
	for round := range killRounds {
		time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond)
		a.stop(syscall.SIGKILL)
		for dir := range dirs {
			if extra, err := leftovers(dir); err == nil && len(extra) > 0 {
				debris++
				break
			}
		}
		started := time.Now()
		a.start()
		ready := time.Since(started)
		readyTotal += ready
		readyMax = max(readyMax, ready)
		if t.Failed() {
			t.Fatalf("round %d: stopping", round)
		}
	}
	last := storm.stop(t)
	stormEnded := time.Now()
	for dir := range dirs {
		waitForGeneration(t, dir, last[volumeOf[dir]], 60*time.Second)
	}
	converged := time.Since(stormEnded)
	stats := reader.stop()
	for _, p := range stats.Problems {
		t.Errorf("reader: %s", p)
	}
	if stats.Reads < 1000 {
		t.Errorf("the reader read only %d times: it proves little", stats.Reads)
	}
	for dir := range dirs {
		if extra, err := leftovers(dir); err != nil || len(extra) > 0 {
			t.Errorf("%s: debris after the storm: %v %v", dir, extra, err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "..data_tmp")); err == nil {
			t.Errorf("%s: a stale ..data_tmp", dir)
		}
	}
	t.Logf("%d kills during %s; %d left debris behind; restart to ready: mean %s, max %s; converged %s after the storm",
		killRounds, storm, debris, (readyTotal / killRounds).Round(time.Millisecond), readyMax.Round(time.Millisecond), converged.Round(time.Millisecond))
	if storm.updates.Load() < 1000 {
		t.Errorf("only %s: not a storm", storm)
	}
	recordReliability(t, reliabilityRow{
		Fault: fmt.Sprintf("SIGKILL ×%d during %d updates/s (%d kills left debris, all repaired; restart to ready: mean %s, max %s)",
			killRounds, 40, debris, (readyTotal / killRounds).Round(time.Millisecond), readyMax.Round(time.Millisecond)),
		Strategy: "watch", Reads: stats, DataLost: stats.Lost(), Recovery: converged,
		Requests: "n/a (one agent restart per kill)",
	})
}
