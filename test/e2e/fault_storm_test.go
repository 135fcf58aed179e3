//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// updateStorm updates a set of ConfigMaps as fast as asked, each update a
// new generation of self-checking data (generationData), until stopped.
type updateStorm struct {
	ns         string
	keys, size int
	client     kubernetes.Interface

	mu   sync.Mutex
	gens map[string]int // the last generation sent, by ConfigMap

	updates, failures atomic.Int64
	cancel            context.CancelFunc
	done              sync.WaitGroup
}

// startStorm sends rate updates per second in all, spread over the
// ConfigMaps names (created at generation 1 if missing), from workers
// concurrent clients without client-side rate limits. Updates of one
// ConfigMap may land out of order; what the volumes must converge to is
// read back from the apiserver at the end. A failed update (the apiserver
// restarting) is counted and the storm goes on.
func startStorm(t *testing.T, ns string, names []string, keys, size int, rate float64, workers int) *updateStorm {
	t.Helper()
	cfg := cp.RESTConfig()
	cfg.QPS, cfg.Burst = -1, 0
	cfg.UserAgent = "fault-suite-storm"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &updateStorm{ns: ns, keys: keys, size: size, client: client, gens: map[string]int{}}
	for _, name := range names {
		if _, err := client.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			createConfigMap(t, ns, name, generationData(1, keys, size))
		}
		s.gens[name] = 1
	}
	// Stopping ends the loops, never an update in flight: an update whose
	// request was cancelled may still be applied after the read-back in
	// stop, which would then name the wrong last generation.
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	interval := time.Duration(float64(time.Second) * float64(workers) / rate)
	for w := range workers {
		s.done.Go(func() {
			ticker := time.NewTicker(interval)
			defer ticker.Stop()
			for i := w; ctx.Err() == nil; i += workers {
				s.update(names[i%len(names)])
				select {
				case <-ctx.Done():
				case <-ticker.C:
				}
			}
		})
	}
	return s
}

// update writes the next generation of one ConfigMap.
func (s *updateStorm) update(name string) {
	s.mu.Lock()
	s.gens[name]++
	gen := s.gens[name]
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name}, Data: generationData(gen, s.keys, s.size)}
	if _, err := s.client.CoreV1().ConfigMaps(s.ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		s.failures.Add(1)
		return
	}
	s.updates.Add(1)
}

// stop ends the storm and returns the last generation of each ConfigMap,
// read back from the apiserver: the content every volume must converge to.
func (s *updateStorm) stop(t *testing.T) map[string]int {
	t.Helper()
	s.cancel()
	s.done.Wait()
	last := map[string]int{}
	for name := range s.gens {
		cm, err := s.client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		gen, err := parseGeneration([]byte(cm.Data["key-00"]))
		if err != nil {
			t.Fatalf("ConfigMap %s: %v", name, err)
		}
		last[name] = gen
	}
	return last
}

func (s *updateStorm) String() string {
	return fmt.Sprintf("%d updates (%d failed)", s.updates.Load(), s.failures.Load())
}
