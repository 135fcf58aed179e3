//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/agent"
)

// procStats reads a process's CPU time (user + system) and its current and
// peak resident memory from /proc.
func procStats(t *testing.T, pid int) (cpu time.Duration, rss, peakRSS int64) {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	const clockTicks = 100 // USER_HZ on Linux
	cpu = time.Duration(utime+stime) * time.Second / clockTicks

	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "VmRSS:" || f[0] == "VmHWM:") {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			if f[0] == "VmRSS:" {
				rss = kb * 1024
			} else {
				peakRSS = kb * 1024
			}
		}
	}
	return cpu, rss, peakRSS
}

// The kubelet's default maximum of 110 pods on one node, each with its own
// ConfigMap volume, at the kubelet's default sync frequency: a guard against
// a gross regression of what the agent costs once everything is mounted.
// The figures go to the test log; the 30 s window holds few syncs, so the
// published figures come from `make idle` (docs/performance.md).
func TestAgentIdleCostWith110Pods(t *testing.T) {
	if testing.Short() {
		t.Skip("measures for 30 s")
	}
	const pods = 110
	ns := createNamespace(t, "cost")
	createNode(t, "node-cost", 60)
	a := startAgent(t, "node-cost", "--sync-frequency=1m")
	for i := range pods {
		createConfigMap(t, ns, fmt.Sprintf("cm-%d", i), map[string]string{"config.yaml": strings.Repeat("x", 1024)})
		createPod(t, ns, fmt.Sprintf("pod-%d", i), "node-cost", volume{name: "cfg", configMap: fmt.Sprintf("cm-%d", i)})
	}
	start := time.Now()
	testutil.Eventually(t, pollInterval, 60*time.Second, func() error {
		if n := a.metrics().Sum(agent.MetricVolumesMounted, nil); n != pods {
			return fmt.Errorf("%v of %d volumes mounted", n, pods)
		}
		return nil
	})
	t.Logf("%d volumes mounted %s after the last pod was created", pods, time.Since(start).Round(100*time.Millisecond))

	const window = 30 * time.Second
	cpu0, _, _ := procStats(t, a.proc.Pid())
	time.Sleep(window)
	cpu1, rss, peak := procStats(t, a.proc.Pid())
	cores := (cpu1 - cpu0).Seconds() / window.Seconds()
	t.Logf("idle agent with %d pods: CPU %.4f cores (%s over %s), RSS %.1f MiB, peak RSS %.1f MiB",
		pods, cores, cpu1-cpu0, window, float64(rss)/(1<<20), float64(peak)/(1<<20))
	if cores > 0.25 || rss > 256<<20 {
		t.Errorf("idle cost regressed: %.3f cores, %.0f MiB", cores, float64(rss)/(1<<20))
	}
}
