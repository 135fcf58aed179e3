//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/agent"
)

const (
	syncFrequency = 2 * time.Second
	nodeTTL       = 2 * time.Second
)

// An update reaches disk within S·1.5 (the longest sync interval) + T (the
// cache may serve the old copy that long) + a few seconds of slack.
var updateDeadline = syncFrequency*3/2 + nodeTTL + 5*time.Second

func TestAgentWritesVolumes(t *testing.T) {
	ns := createNamespace(t, "volumes")
	createNode(t, "node-volumes", int(nodeTTL/time.Second))
	a := startAgent(t, "node-volumes", "--sync-frequency="+syncFrequency.String())

	cm := createConfigMap(t, ns, "app-config", map[string]string{"app.yaml": "level: info\n", "extra": "x"})
	cm.BinaryData = map[string][]byte{"blob": {0, 1, 2, 255}}
	if _, err := clientset.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mode := func(m int32) *int32 { return &m }
	pod := createPod(t, ns, "app", "node-volumes",
		volume{name: "all", configMap: "app-config", defaultMode: mode(0o440)},
		volume{name: "picked", configMap: "app-config", items: []corev1.KeyToPath{
			{Key: "app.yaml", Path: "conf/app.yaml", Mode: mode(0o600)},
			{Key: "blob", Path: "bin/blob"},
		}},
	)

	a.waitForFile(a.volumePath(pod, "all", "app.yaml"), "level: info\n", 30*time.Second)
	checks := []struct {
		volume, file, content string
		mode                  os.FileMode
	}{
		{"all", "app.yaml", "level: info\n", 0o440},
		{"all", "extra", "x", 0o440},
		{"all", "blob", "\x00\x01\x02\xff", 0o440},
		{"picked", "conf/app.yaml", "level: info\n", 0o600},
		{"picked", "bin/blob", "\x00\x01\x02\xff", 0o644},
	}
	for _, c := range checks {
		path := a.volumePath(pod, c.volume, c.file)
		a.waitForFile(path, c.content, 10*time.Second)
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != c.mode {
			t.Errorf("%s/%s: mode %o, want %o", c.volume, c.file, info.Mode().Perm(), c.mode)
		}
	}
	if _, err := os.Stat(a.volumePath(pod, "picked", "extra")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("picked/extra exists: items must select keys")
	}

	// An update reaches disk within the deadline.
	start := time.Now()
	updateConfigMap(t, ns, "app-config", "app.yaml", "level: debug\n")
	a.waitForFile(a.volumePath(pod, "all", "app.yaml"), "level: debug\n", updateDeadline)
	t.Logf("update reached disk in %s (deadline %s)", time.Since(start).Round(100*time.Millisecond), updateDeadline)

	// /debug/volumes shows what is on disk.
	volumes, err := a.debugVolumes()
	if err != nil {
		t.Fatal(err)
	}
	if len(volumes) != 2 || volumes[0].Pod != ns+"/app" || volumes[0].ContentHash == "" {
		t.Errorf("/debug/volumes: %+v", volumes)
	}

	// A deleted pod's directory goes.
	deletePodNow(t, pod)
	podDir := filepath.Join(a.rootDir, "pods", string(pod.UID))
	testutil.Eventually(t, pollInterval, 20*time.Second, func() error {
		if _, err := os.Stat(podDir); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s still exists", podDir)
		}
		return nil
	})
}

func TestAgentErrorsStayWithTheirVolume(t *testing.T) {
	ns := createNamespace(t, "errors")
	createNode(t, "node-errors", int(nodeTTL/time.Second))
	a := startAgent(t, "node-errors", "--sync-frequency="+syncFrequency.String())
	createConfigMap(t, ns, "good", map[string]string{"k": "v"})

	pod := createPod(t, ns, "mixed", "node-errors",
		volume{name: "good", configMap: "good"},
		volume{name: "missing", configMap: "not-yet"},
		volume{name: "later", configMap: "created-later", optional: true},
		volume{name: "bad-path", configMap: "good", items: []corev1.KeyToPath{{Key: "k", Path: "a"}, {Key: "k", Path: "a/b"}}},
	)
	a.waitForFile(a.volumePath(pod, "good", "k"), "v", 30*time.Second)
	if _, err := os.Stat(a.volumePath(pod, "later", "")); err != nil {
		t.Errorf("optional volume of a missing ConfigMap: %v, want an empty volume", err)
	}

	// Each failure is a FailedMount event on the pod, naming the volume.
	testutil.Eventually(t, pollInterval, 30*time.Second, func() error {
		events, err := clientset.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		var got []string
		for _, e := range events.Items {
			if e.Reason == "FailedMount" && e.InvolvedObject.Name == "mixed" {
				got = append(got, e.Message)
			}
		}
		all := strings.Join(got, "\n")
		for _, want := range []string{`volume "missing"`, `"not-yet" not found`, `volume "bad-path"`, "both a file and a directory"} {
			if !strings.Contains(all, want) {
				return fmt.Errorf("no FailedMount event containing %q in %q", want, all)
			}
		}
		return nil
	})

	// The missing ConfigMaps appear: both volumes follow.
	createConfigMap(t, ns, "not-yet", map[string]string{"k": "now"})
	createConfigMap(t, ns, "created-later", map[string]string{"k": "later"})
	a.waitForFile(a.volumePath(pod, "missing", "k"), "now", 30*time.Second)
	a.waitForFile(a.volumePath(pod, "later", "k"), "later", 30*time.Second)
}

// Killed with SIGKILL and restarted, the agent converges: changes made
// while it was down reach disk, a pod deleted meanwhile loses its files, a
// new pod gets them, and the volumes of the rest were never removed.
func TestAgentRecoversFromSIGKILL(t *testing.T) {
	ns := createNamespace(t, "sigkill")
	createNode(t, "node-sigkill", int(nodeTTL/time.Second))
	a := startAgent(t, "node-sigkill", "--sync-frequency="+syncFrequency.String())
	createConfigMap(t, ns, "shared", map[string]string{"k": "v1"})
	stays := createPod(t, ns, "stays", "node-sigkill", volume{name: "cfg", configMap: "shared"})
	goes := createPod(t, ns, "goes", "node-sigkill", volume{name: "cfg", configMap: "shared"})
	a.waitForFile(a.volumePath(stays, "cfg", "k"), "v1", 30*time.Second)
	a.waitForFile(a.volumePath(goes, "cfg", "k"), "v1", 30*time.Second)

	a.stop(syscall.SIGKILL)
	updateConfigMap(t, ns, "shared", "k", "v2")
	deletePodNow(t, goes)
	arrives := createPod(t, ns, "arrives", "node-sigkill", volume{name: "cfg", configMap: "shared"})
	// A crash leftover the restarted agent must repair.
	os.Symlink("..nowhere", filepath.Join(filepath.Dir(a.volumePath(stays, "cfg", "k")), "..data_tmp"))

	// Watch the kept volume's file while the agent restarts: it must never
	// disappear.
	stop := make(chan struct{})
	vanished := make(chan string, 1)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := os.ReadFile(a.volumePath(stays, "cfg", "k")); err != nil {
				select {
				case vanished <- err.Error():
				default:
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	a.start()
	a.waitForFile(a.volumePath(stays, "cfg", "k"), "v2", updateDeadline)
	a.waitForFile(a.volumePath(arrives, "cfg", "k"), "v2", 30*time.Second)
	testutil.Eventually(t, pollInterval, 20*time.Second, func() error {
		if _, err := os.Stat(filepath.Join(a.rootDir, "pods", string(goes.UID))); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("the deleted pod's directory is still there")
		}
		return nil
	})
	close(stop)
	select {
	case err := <-vanished:
		t.Errorf("a kept pod's file vanished during the restart: %s", err)
	default:
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(a.volumePath(stays, "cfg", "k")), "..data_tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the stale ..data_tmp survived the restart")
	}
}

// The agent's own GET counters agree with the apiserver's, and the
// every-sync mode sends one etcd read per pod sync.
func TestAgentCountsAgreeWithAPIServer(t *testing.T) {
	modeArgs := map[string][]string{
		"every-sync":      {"--cache-invalidation=every-sync"},
		"first-reference": {"--cache-invalidation=first-reference"},
		"watch":           {"--configmap-strategy=Watch"},
	}
	for _, mode := range []string{"every-sync", "first-reference", "watch"} {
		t.Run(mode, func(t *testing.T) {
			ns := createNamespace(t, "counts")
			node := "node-counts-" + mode
			createNode(t, node, 300)
			a := startAgent(t, node, append([]string{"--sync-frequency=1s"}, modeArgs[mode]...)...)
			var pods []*corev1.Pod
			for i := range 5 {
				createConfigMap(t, ns, fmt.Sprintf("cm-%d", i), map[string]string{"k": "v"})
				pods = append(pods, createPod(t, ns, fmt.Sprintf("pod-%d", i), node, volume{name: "cfg", configMap: fmt.Sprintf("cm-%d", i)}))
			}
			for _, p := range pods {
				a.waitForFile(a.volumePath(p, "cfg", "k"), "v", 30*time.Second)
			}
			// The agent's scrapes lie between two of the apiserver's at
			// each end: its window holds the apiserver's inner one and lies
			// in its outer one, however long a scrape takes on a busy
			// machine (GETs go on meanwhile, five a second in every-sync).
			apiOuterBefore, agentBefore, apiInnerBefore := scrapeAPIServer(t), a.metrics(), scrapeAPIServer(t)
			time.Sleep(8 * time.Second)
			apiInnerAfter, agentAfter, apiOuterAfter := scrapeAPIServer(t), a.metrics(), scrapeAPIServer(t)

			agentGets := agentAfter.Sum(agent.MetricConfigMapGets, nil) - agentBefore.Sum(agent.MetricConfigMapGets, nil)
			agentQuorum := agentAfter.Sum(agent.MetricConfigMapGets, map[string]string{"resource_version": "unset"}) -
				agentBefore.Sum(agent.MetricConfigMapGets, map[string]string{"resource_version": "unset"})
			apiGets := apiInnerAfter.APIServerConfigMapGets() - apiInnerBefore.APIServerConfigMapGets()
			apiGetsOuter := apiOuterAfter.APIServerConfigMapGets() - apiOuterBefore.APIServerConfigMapGets()
			etcdGets := apiInnerAfter.EtcdConfigMapGets() - apiInnerBefore.EtcdConfigMapGets()
			etcdGetsOuter := apiOuterAfter.EtcdConfigMapGets() - apiOuterBefore.EtcdConfigMapGets()
			syncs := agentAfter.Sum(agent.MetricPodWork, map[string]string{"kind": "sync"}) - agentBefore.Sum(agent.MetricPodWork, map[string]string{"kind": "sync"})
			t.Logf("over 8 s: %v pod syncs; agent GETs %v (quorum %v); apiserver GETs %v to %v; etcd gets %v to %v",
				syncs, agentGets, agentQuorum, apiGets, apiGetsOuter, etcdGets, etcdGetsOuter)

			// Requests in flight at a scrape can land on either side of it.
			const slack = 2
			if agentGets < apiGets-slack || agentGets > apiGetsOuter+slack {
				t.Errorf("agent counted %v GETs, the apiserver %v to %v over windows around the agent's", agentGets, apiGets, apiGetsOuter)
			}
			if agentQuorum < etcdGets-slack || agentQuorum > etcdGetsOuter+slack {
				t.Errorf("agent counted %v quorum GETs, etcd reads %v to %v over windows around the agent's", agentQuorum, etcdGets, etcdGetsOuter)
			}
			switch mode {
			case "every-sync":
				// A pod's sync is counted when it ends and its GET is sent by
				// the remount after it: each pod can have one of the two on
				// either side of each scrape, more so on a loaded machine.
				if syncs < 20 || math.Abs(etcdGets-syncs) > float64(len(pods)) {
					t.Errorf("every-sync: %v etcd reads for %v pod syncs, want one per sync", etcdGets, syncs)
				}
			case "first-reference", "watch":
				// The agents' own count is exact; the apiserver's may hold a
				// read by its own controllers (about one a minute).
				if agentGets != 0 || apiGets > slack || etcdGets > slack {
					t.Errorf("%s with T=300s: %v agent GETs, %v apiserver GETs, %v etcd reads in steady state; want 0", mode, agentGets, apiGets, etcdGets)
				}
			}
		})
	}
}

// With the apiserver down, volumes keep their content and other work goes
// on; once it is back, changes flow again.
func TestAgentSurvivesDeadAPIServer(t *testing.T) {
	ns := createNamespace(t, "dead")
	createNode(t, "node-dead", int(nodeTTL/time.Second))
	a := startAgent(t, "node-dead", "--sync-frequency="+syncFrequency.String())
	createConfigMap(t, ns, "cfg", map[string]string{"k": "v1"})
	pod := createPod(t, ns, "app", "node-dead", volume{name: "cfg", configMap: "cfg"})
	a.waitForFile(a.volumePath(pod, "cfg", "k"), "v1", 30*time.Second)

	cp.StopAPIServer()
	// Several sync periods and TTLs pass: refreshes fail, the file stays.
	deadline := time.Now().Add(3 * (syncFrequency + nodeTTL))
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(a.volumePath(pod, "cfg", "k")); err != nil || string(data) != "v1" {
			t.Fatalf("with the apiserver down the file became %q, %v", data, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cp.StartAPIServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	updateConfigMap(t, ns, "cfg", "k", "v2")
	// The agent's informers and client reconnect on their own.
	a.waitForFile(a.volumePath(pod, "cfg", "k"), "v2", updateDeadline+20*time.Second)
	resp, err := http.Get("http://" + a.httpAddr + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz after the outage: %v %v", resp, err)
	}
}

// --logging-format=json writes one JSON object per line, client-go's lines
// included, with the flag values logged at start-up.
func TestAgentJSONLogs(t *testing.T) {
	createNode(t, "node-json", 2)
	a := startAgent(t, "node-json", "--logging-format=json")
	a.stop(syscall.SIGTERM)
	data, err := os.ReadFile(a.logPath)
	if err != nil {
		t.Fatal(err)
	}
	var sawFlag, sawServing bool
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		if entry["msg"] == "Flag" && entry["name"] == "logging-format" && entry["value"] == "json" {
			sawFlag = true
		}
		if entry["msg"] == "Serving HTTP" && entry["node"] == "node-json" {
			sawServing = true
		}
	}
	if !sawFlag || !sawServing {
		t.Errorf("JSON log lacks the flag line (%v) or the structured serving line (%v):\n%s", sawFlag, sawServing, data)
	}
}
