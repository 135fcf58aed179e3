//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

const (
	// delayPods pods on each node mount every one of delayConfigMaps
	// ConfigMaps, each updated every delayMeanGap on average over
	// delayWindow: about 130 updates, each of delayPods volumes per node.
	delayPods, delayConfigMaps = 4, 8
	delayWindow                = 100 * time.Second
	delayMeanGap               = 6 * time.Second
	delaySync                  = 2 * time.Second
	delayTTLSeconds            = 10
	// delayPoll is how often the volumes' files are read: the resolution
	// of each measured delay.
	delayPoll = 50 * time.Millisecond
)

// TestUpdateDelayAgainstRealKubelets measures how long a ConfigMap update
// takes to reach the volumes of real kubelets (reference kubelets v1.36,
// S = 2 s: one on Cache with T = 10 s, one on Watch), by reading every
// volume's file until it holds the new value, over several rounds of
// updates; then it runs `nodeagent analyze` on the two nodes and requires
// every measured delay within the node's predicted longest, and the
// measured median within 25 % of the predicted median. On the local
// control plane rather than kind: the TTL controller gives kind's
// three-node cluster T = 0, where the Cache strategy's delay is the Watch
// strategy's.
func TestUpdateDelayAgainstRealKubelets(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t, "delay")
	fleet := map[string]model.Strategy{"delay-v136-cache": model.StrategyCache, "delay-v136-watch": model.StrategyWatch}
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	for i := range delayConfigMaps {
		name := fmt.Sprintf("cfg-%d", i)
		createConfigMap(t, ns, name, map[string]string{"value": "0"})
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}}}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: "/etc/" + name})
	}
	kubelets := map[string]*refKubelet{}
	for node, strategy := range fleet {
		createNode(t, node, delayTTLSeconds)
		label := fmt.Sprintf(`{"metadata":{"labels":{"nodeagent.io/delay-e2e":%q}}}`, ns)
		if _, err := clientset.CoreV1().Nodes().Patch(ctx, node, "application/strategic-merge-patch+json", []byte(label), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		kubelets[node] = startRefKubelet(t, "v1.36", node, string(strategy), delaySync,
			fmt.Sprintf("--port=%d", freePort(t)), "--client-ca-file="+cp.ClientCAFile())
	}
	// Pods a second apart, each on a sync tick of its own.
	var pods []*corev1.Pod
	for i := range delayPods {
		for node := range fleet {
			pod, err := clientset.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", node, i)},
				Spec: corev1.PodSpec{NodeName: node, Volumes: volumes,
					Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", VolumeMounts: mounts}}},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pods = append(pods, pod)
		}
		time.Sleep(time.Second)
	}
	// The file of each ConfigMap's volume in every pod, and its node.
	type volumeFile struct{ node, path string }
	files := make([][]volumeFile, delayConfigMaps)
	for _, pod := range pods {
		for i := range delayConfigMaps {
			dir := volumemanager.VolumeDir(kubelets[pod.Spec.NodeName].rootDir, string(pod.UID), volumemanager.PluginConfigMap, fmt.Sprintf("cfg-%d", i))
			files[i] = append(files[i], volumeFile{pod.Spec.NodeName, filepath.Join(dir, "value")})
		}
	}
	testutil.Eventually(t, pollInterval, 2*time.Minute, func() error {
		for _, list := range files {
			for _, f := range list {
				if data, err := os.ReadFile(f.path); err != nil || string(data) != "0" {
					return fmt.Errorf("%s not mounted yet", f.path)
				}
			}
		}
		return nil
	})
	time.Sleep(3 * delaySync) // every pod past its first syncs

	// Each ConfigMap is updated at the times of a Poisson process of its
	// own, which knows nothing of the kubelets: its updates fall anywhere
	// in the sync ticks and in the Cache node's refresh cycle of that
	// ConfigMap, as the model's do. A volume's delay for an update is the
	// time until its file holds that value or a later one (content
	// fetched after a later update was fetched after this one too).
	var mu sync.Mutex
	updates := make([][]time.Time, delayConfigMaps) // [ConfigMap][value-1]
	end := time.Now().Add(delayWindow)
	var wg sync.WaitGroup
	failures := make(chan error, delayConfigMaps)
	for i := range delayConfigMaps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 120255))
			for {
				time.Sleep(time.Duration(rng.ExpFloat64() * float64(delayMeanGap)))
				if time.Now().After(end) {
					return
				}
				cm, err := clientset.CoreV1().ConfigMaps(ns).Get(ctx, fmt.Sprintf("cfg-%d", i), metav1.GetOptions{})
				if err == nil {
					mu.Lock()
					cm.Data["value"] = strconv.Itoa(len(updates[i]) + 1)
					mu.Unlock()
					sent := time.Now()
					if _, err = clientset.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err == nil {
						mu.Lock()
						updates[i] = append(updates[i], sent)
						mu.Unlock()
					}
				}
				if err != nil {
					failures <- err
					return
				}
			}
		}()
	}
	delays := map[string][]float64{}
	seen := make([][]int, delayConfigMaps) // [ConfigMap][file]: the updates each file has shown
	for i := range seen {
		seen[i] = make([]int, len(files[i]))
	}
	settled := func() bool { // every update shown by every file
		for i := range files {
			for j := range files[i] {
				if seen[i][j] < len(updates[i]) {
					return false
				}
			}
		}
		return true
	}
	for {
		now := time.Now()
		mu.Lock()
		for i, list := range files {
			for j, f := range list {
				data, err := os.ReadFile(f.path)
				value, convErr := strconv.Atoi(string(data))
				if err != nil || convErr != nil {
					continue
				}
				for ; seen[i][j] < min(value, len(updates[i])); seen[i][j]++ {
					delays[f.node] = append(delays[f.node], now.Sub(updates[i][seen[i][j]]).Seconds())
				}
			}
		}
		done := now.After(end) && settled()
		mu.Unlock()
		if done {
			break
		}
		if now.After(end.Add(time.Duration(delayTTLSeconds)*time.Second + 2*delaySync + 10*time.Second)) {
			t.Fatal("updates still not in every volume well past the longest delay")
		}
		time.Sleep(delayPoll)
	}
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Fatal(err)
	}

	out, err := exec.Command(e2eutil.NodeagentBinary(t), "analyze", "--kubeconfig="+cp.KubeconfigPath,
		"--node-selector=nodeagent.io/delay-e2e="+ns, "-o", "json").Output()
	if err != nil {
		t.Fatalf("nodeagent analyze: %v\n%s", err, stderrOf(err))
	}
	var r analyze.Result
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("analyze -o json: %v\n%s", err, out)
	}
	for _, n := range r.Nodes {
		measured := delays[n.Name]
		if n.UpdateDelay == nil || len(measured) == 0 || n.SettingsSource != analyze.FromConfigz {
			t.Errorf("%s: predicted delay %v from %s settings, %d measured", n.Name, n.UpdateDelay, n.SettingsSource, len(measured))
			continue
		}
		slices.Sort(measured)
		median, longest := model.Quantile(measured, 0.5), measured[len(measured)-1]
		t.Logf("%s (%s, S = %gs, T = %gs): %d delays measured, median %.2f s, longest %.2f s; predicted median %.2f s, longest %.2f s",
			n.Name, n.Behaviour, n.SyncFrequencySeconds, n.TTLSeconds, len(measured), median, longest, n.UpdateDelay.Median, n.UpdateDelay.Max)
		// A delay is measured to within one poll of the files.
		if longest > n.UpdateDelay.Max+delayPoll.Seconds() {
			t.Errorf("%s: an update took %.2f s, longer than the predicted longest %.2f s", n.Name, longest, n.UpdateDelay.Max)
		}
		if math.Abs(median-n.UpdateDelay.Median) > 0.25*n.UpdateDelay.Median {
			t.Errorf("%s: measured median %.2f s, more than 25 %% from the predicted %.2f s", n.Name, median, n.UpdateDelay.Median)
		}
	}
	if len(r.Nodes) != len(fleet) {
		t.Errorf("analyze saw %d nodes, want %d", len(r.Nodes), len(fleet))
	}
}
