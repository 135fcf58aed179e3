// Package churn makes a comparison's pods come and go (--pod-churn): on
// each node a Poisson stream of pods, each reading ConfigMaps drawn at
// random from its node's pool, each deleted at once (as a kubelet confirms
// a deletion) a fixed lifetime after it was created. It records when each
// pod arrived and what it read, so that a phase predicts from the arrivals
// that happened, not from the rate it asked for: over a minute a Poisson
// count is a few percent off its mean, as much as the model's error.
package churn

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodeagent-io/nodeagent/pkg/compare/objects"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// Config is what a Churner creates.
type Config struct {
	Client    kubernetes.Interface
	Namespace string
	// Pools names, for each node, the ConfigMaps its arriving pods draw
	// PerPod of, at random; Shared, read by every arriving pod on every
	// node, is added to each pod's reads (kube-root-ca.crt, which the
	// admission plugin's volume reads), where set.
	Pools  map[string][]model.Object
	PerPod int
	Shared *model.Object
	// Rate is pods a second on each node; Lifetime is each one's time
	// from its creation to its deletion.
	Rate     float64
	Lifetime time.Duration
	// Pod is how the run makes its pods (image, service-account volume).
	Pod objects.Options
	// Seed makes the arrival times and the ConfigMaps drawn repeatable.
	Seed  uint64
	Clock clock.WithTicker
}

// arrival is one pod that arrived: where, when, and what it reads.
type arrival struct {
	node  string
	at    time.Time
	reads []model.Object
}

// Churner runs one phase's churn (Run) and says what arrived (Arrivals).
type Churner struct {
	cfg     Config
	mu      sync.Mutex
	arrived []arrival
	// failed counts creations and deletions the apiserver refused.
	failed atomic.Int64
	seq    atomic.Int64
}

// New returns a Churner of cfg.
func New(cfg Config) *Churner {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Churner{cfg: cfg}
}

// Run makes pods arrive on every node until ctx ends, then deletes those
// still there and returns once they are gone. It fails only if it cannot
// delete them; a creation or deletion the apiserver refuses mid-run is
// counted (Failed) and logged, and the run goes on.
func (c *Churner) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for i, node := range slices.Sorted(maps.Keys(c.cfg.Pools)) {
		rng := rand.New(rand.NewPCG(c.cfg.Seed, uint64(i)))
		pool := c.cfg.Pools[node]
		wg.Go(func() { c.arrive(ctx, &wg, node, pool, rng) })
	}
	wg.Wait()
	return c.deleteAll()
}

// arrive is one node's stream: exponential gaps, each pod created in a
// goroutine of its own so that a slow create does not delay the next.
func (c *Churner) arrive(ctx context.Context, wg *sync.WaitGroup, node string, pool []model.Object, rng *rand.Rand) {
	for {
		gap := time.Duration(rng.ExpFloat64() / c.cfg.Rate * float64(time.Second))
		select {
		case <-ctx.Done():
			return
		case <-c.cfg.Clock.After(gap):
		}
		reads := c.draw(pool, rng)
		name := fmt.Sprintf("arriving-%06d", c.seq.Add(1))
		wg.Go(func() { c.live(ctx, node, name, reads) })
	}
}

// draw picks PerPod distinct ConfigMaps of pool, and the shared one.
func (c *Churner) draw(pool []model.Object, rng *rand.Rand) []model.Object {
	reads := make([]model.Object, 0, c.cfg.PerPod+1)
	for _, i := range rng.Perm(len(pool))[:c.cfg.PerPod] {
		reads = append(reads, pool[i])
	}
	if c.cfg.Shared != nil {
		reads = append(reads, *c.cfg.Shared)
	}
	return reads
}

// live creates one pod, records its arrival, and deletes it a lifetime
// later (or when ctx ends: deleteAll takes those).
func (c *Churner) live(ctx context.Context, node, name string, reads []model.Object) {
	pod := model.Pod{Name: name, Volumes: len(reads), Reads: reads}
	if err := objects.CreateArrivingPod(ctx, c.cfg.Client, c.cfg.Namespace, node, pod, c.cfg.Pod); err != nil {
		if ctx.Err() == nil {
			c.failed.Add(1)
			klog.FromContext(ctx).Info("Creating an arriving pod failed", "pod", name, "node", node, "err", err)
		}
		return
	}
	c.mu.Lock()
	c.arrived = append(c.arrived, arrival{node: node, at: c.cfg.Clock.Now(), reads: reads})
	c.mu.Unlock()
	select {
	case <-ctx.Done():
		return
	case <-c.cfg.Clock.After(c.cfg.Lifetime):
	}
	if err := deleteNow(ctx, c.cfg.Client, c.cfg.Namespace, name); err != nil && ctx.Err() == nil {
		c.failed.Add(1)
		klog.FromContext(ctx).Info("Deleting an arriving pod failed", "pod", name, "node", node, "err", err)
	}
}

// deleteNow deletes a pod with no grace period: no kubelet of the run's
// nodes confirms a graceful deletion, and the reference kubelets see the
// pod go at once, as the agents do.
func deleteNow(ctx context.Context, client kubernetes.Interface, namespace, name string) error {
	zero := int64(0)
	err := client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// deleteAll deletes the arriving pods still there, one by one (a create
// in flight when the churn stopped may land after a first pass), until the
// apiserver lists none, so that the next phase starts without them.
func (c *Churner) deleteAll() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	selector := metav1.ListOptions{LabelSelector: objects.ArrivingSelector(c.cfg.Namespace)}
	var err error
	for {
		var left *corev1.PodList
		if left, err = c.cfg.Client.CoreV1().Pods(c.cfg.Namespace).List(ctx, selector); err == nil {
			if len(left.Items) == 0 {
				return nil
			}
			for _, pod := range left.Items {
				err = errors.Join(err, deleteNow(ctx, c.cfg.Client, c.cfg.Namespace, pod.Name))
			}
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("arriving pods still listed after a minute: delete those labelled %s", selector.LabelSelector), err)
		case <-c.cfg.Clock.After(200 * time.Millisecond):
		}
	}
}

// Failed counts the creations and deletions the apiserver refused.
func (c *Churner) Failed() int { return int(c.failed.Load()) }

// Arrivals are the arrivals in [from, to) on each node, as the model
// takes them: each object's pods a second, and how many pods arrived.
// Their pods' containers start at once (the reference kubelets' fake
// runtime) and run until the pod is deleted: PLEGResyncs(0, Lifetime).
func (c *Churner) Arrivals(from, to time.Time) (byNode map[string][]model.Arrival, pods int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seconds := to.Sub(from).Seconds()
	counts := map[string]map[model.Object]int{}
	for _, a := range c.arrived {
		if a.at.Before(from) || !a.at.Before(to) {
			continue
		}
		pods++
		if counts[a.node] == nil {
			counts[a.node] = map[model.Object]int{}
		}
		for _, o := range a.reads {
			counts[a.node][o]++
		}
	}
	byNode = map[string][]model.Arrival{}
	for node, objs := range counts {
		for o, n := range objs {
			byNode[node] = append(byNode[node], model.Arrival{Object: o, Rate: float64(n) / seconds, Lifetime: c.cfg.Lifetime,
				Resyncs: model.PLEGResyncs(0, c.cfg.Lifetime)})
		}
	}
	return byNode, pods
}
