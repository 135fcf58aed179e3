package configmapcache

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// hungConfigMaps is an apiserver that accepts requests and never answers:
// each call returns only when its context ends.
type hungConfigMaps struct{}

func (hungConfigMaps) Get(ctx context.Context, _ string, _ metav1.GetOptions) (*corev1.ConfigMap, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (hungConfigMaps) List(ctx context.Context, _ metav1.ListOptions) (*corev1.ConfigMapList, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (hungConfigMaps) Watch(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (hungConfigMaps) IsWatchListSemanticsUnSupported() bool { return true }

// A read ends with its caller's context, whatever the strategy: a shutdown
// (or a volume operation cut short) never waits for a hung apiserver's GET
// or for a watch that cannot list.
func TestReadsEndWithTheCallersContext(t *testing.T) {
	hung := func(string) ConfigMapClient { return hungConfigMaps{} }
	for _, strategy := range model.Strategies {
		t.Run(string(strategy), func(t *testing.T) {
			m, err := New(Options{Strategy: strategy, Invalidation: InvalidateFirstReference, ConfigMaps: hung,
				TTL: func() time.Duration { return time.Minute }})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Stop()
			m.RegisterPod(podUsing("a", "cm"))
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := m.GetConfigMap(ctx, ns, "cm"); !errors.Is(err, context.Canceled) {
				t.Errorf("GetConfigMap with a cancelled context: %v, want context.Canceled", err)
			}
		})
	}
}
