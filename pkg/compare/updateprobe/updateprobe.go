// Package updateprobe measures how long ConfigMap updates take to reach the
// volumes that mount them: it updates a comparison's ConfigMaps at a steady
// rate and watches, with inotify, every volume on this machine's disk that
// mounts one.
package updateprobe

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/pkg/compare/objects"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// Result is how long a phase's ConfigMap updates took to reach the
// disk of every pod that mounts them: one sample per update and volume,
// from the moment the apiserver acknowledged the update (it was committed
// and any reader could see it) to the moment the volume's ..data link
// points at a generation holding it (or a later one). The JSON keys are
// stable.
type Result struct {
	Updates int `json:"updates"`
	Samples int `json:"samples"`
	// APIWriteP50Seconds and APIWriteP99Seconds are how long the
	// apiserver took to acknowledge the updates: not in the samples.
	APIWriteP50Seconds float64 `json:"api_write_p50_seconds"`
	APIWriteP99Seconds float64 `json:"api_write_p99_seconds"`
	// Unseen counts (update, volume) pairs not on disk when the phase
	// ended, its drain included; they are not in the percentiles.
	Unseen     int     `json:"unseen"`
	P50Seconds float64 `json:"p50_seconds"`
	P99Seconds float64 `json:"p99_seconds"`
	MaxSeconds float64 `json:"max_seconds"`
	// The kubelet's behaviour for the same strategy, from the model
	// (docs/model.md): nodeagent's watch mode beside the kubelet's Watch
	// strategy, which waits for each pod's next sync.
	ModelP50Seconds float64 `json:"model_p50_seconds"`
	ModelP99Seconds float64 `json:"model_p99_seconds"`
	// BoundSeconds is the longest the strategy may take, by the model.
	BoundSeconds float64 `json:"bound_seconds"`

	// SampleSeconds are the samples, sorted, for the chart; not in the
	// JSON.
	SampleSeconds []float64 `json:"-"`
}

// latencyKey is the data key every update rewrites; its value carries the
// phase and the update's generation, so that no update of one phase
// repeats the content of another's.
const latencyKey = "config.yaml"

func generationValue(configMap string, phase string, generation int) string {
	return fmt.Sprintf("name: %s\nphase: %s\ngeneration: %d\n", configMap, phase, generation)
}

// parseGeneration reads the generation of phase from a volume's file; the
// content the run created, and an earlier phase's, are generation 0.
func parseGeneration(data []byte, phase string) (int, bool) {
	if !strings.HasPrefix(string(data), "name: ") {
		return 0, false
	}
	if !strings.Contains(string(data), "\nphase: "+phase+"\n") {
		return 0, true
	}
	_, rest, _ := strings.Cut(string(data), "generation: ")
	n, err := strconv.Atoi(strings.TrimSpace(rest))
	return n, err == nil
}

// Probe updates the run's ConfigMaps at a steady rate and watches,
// with inotify, every volume that mounts one, recording when each update
// reaches each volume. A later generation on disk counts for the earlier
// updates it supersedes.
type Probe struct {
	client    kubernetes.Interface
	namespace string
	phase     string
	rate      float64
	// volumes maps each updated ConfigMap to the directories of the
	// volumes that mount it, on every node of the fleet.
	volumes    map[string][]string
	configMaps []string
	watcher    *fsnotify.Watcher

	mu sync.Mutex
	// sent[cm][g-1] is when the apiserver acknowledged generation g of
	// cm; writes are how long each acknowledgement took.
	sent   map[string][]time.Time
	writes []float64
	// seen is the newest generation on disk in each volume directory;
	// dirConfigMap, the ConfigMap each one mounts.
	seen         map[string]int
	dirConfigMap map[string]string
	latencies    []float64
}

// New finds the volume directories of the run's pods in namespace on this
// machine (roots maps node names to root directories) and starts watching
// them; phase names the phase in every value the updates write.
func New(ctx context.Context, client kubernetes.Interface, namespace string, phase string, rate float64, roots map[string]string) (*Probe, error) {
	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: objects.RunLabel + "=" + namespace})
	if err != nil {
		return nil, fmt.Errorf("listing the run's pods: %w", err)
	}
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("starting inotify: %w", err)
	}
	p := &Probe{
		client: client, namespace: namespace, phase: phase, rate: rate, watcher: watcher,
		volumes: map[string][]string{}, sent: map[string][]time.Time{}, seen: map[string]int{}, dirConfigMap: map[string]string{},
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		root, ok := roots[pod.Spec.NodeName]
		if !ok {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.ConfigMap == nil {
				continue
			}
			dir := volumeDirOf(root, pod.UID, v.Name)
			if err := watcher.Add(dir); err != nil {
				_ = watcher.Close()
				return nil, fmt.Errorf("watching %s: %w", dir, err)
			}
			cm := v.ConfigMap.Name
			p.volumes[cm] = append(p.volumes[cm], dir)
			p.dirConfigMap[dir] = cm
		}
	}
	if len(p.volumes) == 0 {
		_ = watcher.Close()
		return nil, fmt.Errorf("no ConfigMap volume of the run's pods is on this machine's disk")
	}
	for cm := range p.volumes {
		p.configMaps = append(p.configMaps, cm)
	}
	slices.Sort(p.configMaps)
	return p, nil
}

// volumeDirOf is where a ConfigMap volume lives under a root directory, for
// nodeagent and the kubelet alike.
func volumeDirOf(root string, uid types.UID, volume string) string {
	return podrefs.VolumeDir(root, string(uid), podrefs.PluginConfigMap, volume)
}

// Observe records the generations that reach disk until ctx ends.
func (p *Probe) Observe(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case err, ok := <-p.watcher.Errors:
			if !ok {
				return
			}
			klog.FromContext(ctx).Error(err, "inotify reported an error; latency samples may be missing")
		case ev, ok := <-p.watcher.Events:
			if !ok {
				return
			}
			if filepath.Base(ev.Name) == "..data" && ev.Has(fsnotify.Create) {
				p.landed(filepath.Dir(ev.Name), time.Now())
			}
		}
	}
}

// landed records the generation a volume now holds, seen at t.
func (p *Probe) landed(dir string, t time.Time) {
	data, err := os.ReadFile(filepath.Join(dir, latencyKey))
	if err != nil {
		return // replaced again meanwhile: the next event has it
	}
	generation, ok := parseGeneration(data, p.phase)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	sent := p.sent[p.dirConfigMap[dir]]
	for g := p.seen[dir] + 1; g <= generation && g <= len(sent); g++ {
		// The watch may deliver the change before the client reads the
		// acknowledgement: that is no wait at all.
		p.latencies = append(p.latencies, max(0, t.Sub(sent[g-1]).Seconds()))
	}
	p.seen[dir] = max(p.seen[dir], generation)
}

// Update sends updates round robin over the ConfigMaps until ctx ends, at
// random times at the probe's mean rate (a Poisson process): updates on a
// fixed period would keep one phase against the agents' own 100 ms and 1 s
// ticks and measure that phase alone.
func (p *Probe) Update(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for i := 0; ; i++ {
		timer.Reset(time.Duration(rand.ExpFloat64() / p.rate * float64(time.Second)))
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		cm := p.configMaps[i%len(p.configMaps)]
		p.mu.Lock()
		generation := len(p.sent[cm]) + 1
		// Until acknowledged, the request time stands in: an event that
		// comes before the acknowledgement finds a time to measure from.
		requested := time.Now()
		p.sent[cm] = append(p.sent[cm], requested)
		p.mu.Unlock()
		patch := fmt.Sprintf(`{"data":{%q:%q}}`, latencyKey, generationValue(cm, p.phase, generation))
		if _, err := p.client.CoreV1().ConfigMaps(p.namespace).Patch(ctx, cm, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			if ctx.Err() != nil {
				// Cancelled in flight: it may or may not have landed.
				return nil
			}
			return fmt.Errorf("updating ConfigMap %s: %w", cm, err)
		}
		acked := time.Now()
		p.mu.Lock()
		p.sent[cm][generation-1] = acked
		p.writes = append(p.writes, acked.Sub(requested).Seconds())
		p.mu.Unlock()
	}
}

// Unseen counts the (update, volume) pairs not on disk yet.
func (p *Probe) Unseen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for cm, dirs := range p.volumes {
		for _, dir := range dirs {
			n += len(p.sent[cm]) - min(p.seen[dir], len(p.sent[cm]))
		}
	}
	return n
}

// Result summarises what the probe saw; close it first.
func (p *Probe) Result() Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := Result{SampleSeconds: slices.Clone(p.latencies)}
	for _, sent := range p.sent {
		r.Updates += len(sent)
	}
	slices.Sort(r.SampleSeconds)
	r.Samples = len(r.SampleSeconds)
	writes := slices.Sorted(slices.Values(p.writes))
	r.APIWriteP50Seconds, r.APIWriteP99Seconds = model.Quantile(writes, 0.5), model.Quantile(writes, 0.99)
	if r.Samples > 0 {
		r.P50Seconds, r.P99Seconds, r.MaxSeconds = model.Quantile(r.SampleSeconds, 0.5), model.Quantile(r.SampleSeconds, 0.99), r.SampleSeconds[r.Samples-1]
	}
	return r
}

func (p *Probe) Close() { _ = p.watcher.Close() }
