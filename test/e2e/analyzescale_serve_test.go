//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/apimetrics"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// serveHeader is the analyze-serve-scale table's header.
var serveHeader = []string{"nodes", "first report", "memory then (peak)", "a change in /metrics (median / p99 / longest)", "idle CPU",
	"idle memory", "LISTs and GETs while idle", "CPU under 100 pod updates/s", "peak memory under 100 pod updates/s",
	"peak memory from the start to the updates"}

// serveChanges is how many changes serveAtScale times.
const serveChanges = 100

// serveAtScale measures `analyze --serve` on the cluster TestAnalyzeAtScale
// built: the time to its first report and its memory then; how long each of
// serveChanges ConfigMap deletions (each makes its namespace's pods miss
// it) takes to show in /metrics; then a minute of nothing: its CPU, its
// memory and the requests the apiserver answered meanwhile (every
// client's: on the local control plane, analyze's and the controllers'),
// and its peak memory from its start until then (the first report, the
// changes, the minute); then its CPU and its peak memory under 100 pod
// updates a second. It returns its row of the analyze-serve-scale table.
func serveAtScale(t *testing.T, client kubernetes.Interface, c *scaleCluster) []string {
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	// Kept beside the profiles: with GODEBUG=gctrace=1 in make
	// analyze-scale's environment, the collector's every cycle.
	logPath := filepath.Join(repoRoot(t), "_output", "analyze-scale", fmt.Sprintf("serve-%d.log", c.nodes))
	began := time.Now()
	proc, err := controlplane.StartProcess("analyze-serve", e2eutil.NodeagentBinary(t),
		[]string{"analyze", "--kubeconfig=" + cp.KubeconfigPath, "--read-configz=false", "--serve=" + addr, "--profiling", "-v=2"}, logPath, controlplane.ProcessOptions{Bare: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = proc.Signal(syscall.SIGTERM)
		proc.WaitExit(30 * time.Second)
		proc.Stop(0)
	}()
	testutil.Eventually(t, 100*time.Millisecond, 5*time.Minute, func() error {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", resp.Status)
		}
		return nil
	})
	first := time.Since(began)
	_, rssFirst, peakFirst := procStats(t, proc.Pid())
	t.Logf("analyze --serve: first report after %s, %.0f MiB resident (peak %.0f MiB)", first.Round(100*time.Millisecond),
		float64(rssFirst)/(1<<20), float64(peakFirst)/(1<<20))

	// Where a change's time goes, for `go tool pprof`.
	profiled := make(chan struct{})
	go func() {
		defer close(profiled)
		saveProfile(t, "http://"+addr+"/debug/pprof/profile?seconds=60", filepath.Join(repoRoot(t), "_output", "analyze-scale", "serve-changes-cpu.pprof"))
	}()
	var delays []float64
	for i := range serveChanges {
		// Namespaces from the last: a larger cluster's are new ones.
		ns := c.namespaces[len(c.namespaces)-1-i%len(c.namespaces)]
		deleted := time.Now()
		if err := client.CoreV1().ConfigMaps(ns).Delete(context.Background(), "cm-001", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		series := fmt.Sprintf(`nodeagent_analyze_findings{namespace=%q,type="missing"}`, ns)
		// A scrape renders every node's series: polled more often, it
		// would take the CPU the computation it waits for needs.
		testutil.Eventually(t, 250*time.Millisecond, time.Minute, func() error {
			if v, ok := scrapeValue(addr, series); !ok || v == 0 {
				return fmt.Errorf("%s not in /metrics yet", series)
			}
			return nil
		})
		delays = append(delays, time.Since(deleted).Seconds())
	}
	slices.Sort(delays)
	t.Logf("a change in /metrics: median %.2f s, p99 %.2f s, longest %.2f s over %d changes", model.Quantile(delays, 0.5),
		model.Quantile(delays, 0.99), delays[len(delays)-1], len(delays))

	time.Sleep(15 * time.Second) // the last change's computation done
	<-profiled
	before := scrapeAPIServer(t)
	cpu0, _, _ := procStats(t, proc.Pid())
	const idle = time.Minute
	time.Sleep(idle)
	cpu1, rss, peak := procStats(t, proc.Pid())
	after := scrapeAPIServer(t)
	// What the idle analyzer holds, for `go tool pprof`.
	saveProfile(t, "http://"+addr+"/debug/pprof/heap?gc=1", filepath.Join(repoRoot(t), "_output", "analyze-scale", "serve-heap.pprof"))
	var lists, gets float64
	for _, resource := range []string{"nodes", "pods", "configmaps", "secrets"} {
		lists += after.Sum(apimetrics.APIServerRequests, map[string]string{"verb": "LIST", "resource": resource}) -
			before.Sum(apimetrics.APIServerRequests, map[string]string{"verb": "LIST", "resource": resource})
		gets += after.Sum(apimetrics.APIServerRequests, map[string]string{"verb": "GET", "resource": resource}) -
			before.Sum(apimetrics.APIServerRequests, map[string]string{"verb": "GET", "resource": resource})
	}
	cores := (cpu1 - cpu0).Seconds() / idle.Seconds()
	t.Logf("analyze --serve idle: %.1f millicores, %.0f MiB resident (peak since it started %.0f MiB); the apiserver answered %.0f LISTs and %.0f GETs of those resources meanwhile",
		1000*cores, float64(rss)/(1<<20), float64(peak)/(1<<20), lists, gets)
	busyCores, busyPeak := underPodUpdates(t, client, proc.Pid(), c.pod)
	if data, err := os.ReadFile(logPath); err == nil && t.Failed() {
		t.Logf("analyze --serve log:\n%s", lastLines(data, 40))
	}
	mib := func(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
	return []string{fmt.Sprint(c.nodes), fmt.Sprintf("%.1f s", first.Seconds()), fmt.Sprintf("%s (%s)", mib(rssFirst), mib(peakFirst)),
		fmt.Sprintf("%.2f s / %.2f s / %.2f s over %d", model.Quantile(delays, 0.5), model.Quantile(delays, 0.99), delays[len(delays)-1], len(delays)),
		fmt.Sprintf("%.1f millicores", 1000*cores), mib(rss), fmt.Sprintf("%.0f and %.0f", lists, gets),
		fmt.Sprintf("%.0f millicores", 1000*busyCores), mib(busyPeak), mib(peak)}
}

// scrapeValue reads one series' value from a /metrics page.
func scrapeValue(addr, series string) (float64, bool) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(make([]byte, 64<<10), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// underPodUpdates updates pods' status, 100 a second for 30 s, as kubelets
// do when containers start: each update starts the pod's container again
// (a new start time, which the analysis reads), so that the analyzer
// computes again as often as it does under a stream of real changes. It
// returns the cores the analyzer (process pid) used meanwhile, and its
// peak resident memory meanwhile (the kernel's peak reset as it begins).
func underPodUpdates(t *testing.T, client kubernetes.Interface, pid int, pod func(i int) (string, string)) (float64, int64) {
	const rate, window = 100, 30 * time.Second
	// Writing 5 to clear_refs resets the process's peak resident size.
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Fatal(err)
	}
	cpu0, _, _ := procStats(t, pid)
	began := time.Now()
	tick := time.NewTicker(time.Second / rate)
	defer tick.Stop()
	var g errgroup.Group
	g.SetLimit(32)
	for i := 0; time.Since(began) < window; i++ {
		<-tick.C
		ns, name := pod(i * 7919) // a prime stride: pods of every node and namespace
		started := began.Add(time.Duration(i) * time.Second).UTC().Format(time.RFC3339)
		patch := fmt.Appendf(nil, `{"status":{"phase":"Running","containerStatuses":[{"name":"app","ready":true,"restartCount":%d,`+
			`"image":"registry.k8s.io/pause:3.10","imageID":"","state":{"running":{"startedAt":%q}}}]}}`, i, started)
		g.Go(func() error {
			_, err := client.CoreV1().Pods(ns).Patch(context.Background(), name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	cpu1, _, peak := procStats(t, pid)
	cores := (cpu1 - cpu0).Seconds() / time.Since(began).Seconds()
	t.Logf("analyze --serve under %d pod updates a second: %.0f millicores, peak %.0f MiB resident", rate, 1000*cores, float64(peak)/(1<<20))
	return cores, peak
}

// saveProfile writes the profile at url to path, or says why it could not.
func saveProfile(t *testing.T, url, path string) {
	resp, err := http.Get(url)
	if err != nil {
		t.Logf("no profile: %v", err)
		return
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		t.Logf("no profile: %v", err)
		return
	}
	t.Logf("profile: %s", path)
}
