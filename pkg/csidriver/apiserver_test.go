package csidriver

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeagent-io/nodeagent/pkg/configmapcache"
)

// flakyAPIServer is the fake clientset behind a switch: while down, every
// list and watch fails and the open watches end, as a dead apiserver's do.
type flakyAPIServer struct {
	down    atomic.Bool
	mu      sync.Mutex
	watches []watch.Interface
}

var errDown = errors.New("connection refused")

func (f *flakyAPIServer) client(inner configmapcache.ConfigMapClient) configmapcache.ConfigMapClient {
	return flakyClient{inner: inner, f: f}
}

func (f *flakyAPIServer) setDown(down bool) {
	f.down.Store(down)
	if !down {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.watches {
		w.Stop()
	}
	f.watches = nil
}

type flakyClient struct {
	inner configmapcache.ConfigMapClient
	f     *flakyAPIServer
}

func (c flakyClient) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error) {
	return nil, errors.New("the driver sends no GET")
}

func (c flakyClient) List(ctx context.Context, opts metav1.ListOptions) (*corev1.ConfigMapList, error) {
	if c.f.down.Load() {
		return nil, errDown
	}
	return c.inner.List(ctx, opts)
}

func (c flakyClient) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if c.f.down.Load() {
		return nil, errDown
	}
	w, err := c.inner.Watch(ctx, opts)
	if err == nil {
		c.f.mu.Lock()
		c.f.watches = append(c.f.watches, w)
		c.f.mu.Unlock()
	}
	return w, err
}

func (flakyClient) IsWatchListSemanticsUnSupported() bool { return true }

// An apiserver that is down when a pod starts fails the publish with
// Unavailable (the kubelet retries) and leaves nothing behind; one that
// goes down while a volume is served leaves its content as it is, and the
// updates made meanwhile arrive once it is back.
func TestAPIServerDown(t *testing.T) {
	t.Parallel()
	var api flakyAPIServer
	h := newHarnessWith(t, func(inner configmapcache.ConfigMapClient) configmapcache.ConfigMapClient { return api.client(inner) },
		configMap("app", map[string]string{"k": "1"}))
	v := h.newVolume("uid-1", "config", map[string]string{"configMap": "app"})

	api.setDown(true)
	wantCode(t, h.publish(v), codes.Unavailable, "couldn't get configMap shop/app")
	if exists := h.read(v, "k"); exists != "" {
		t.Errorf("a failed publish left a file: %q", exists)
	}
	api.setDown(false)
	t.Logf("up at %s", time.Now().Format("05.000"))
	h.mustPublish(v)

	api.setDown(true)
	h.setConfigMap("app", map[string]string{"k": "2"})
	if got := h.read(v, "k"); got != "1" {
		t.Errorf("while the apiserver is down the volume holds %q, want its last content 1", got)
	}
	api.setDown(false)
	h.eventually("the update made while the apiserver was down arrives", func() bool { return h.read(v, "k") == "2" })
}
