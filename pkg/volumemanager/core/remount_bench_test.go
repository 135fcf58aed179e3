package core

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/reconciler"
)

// mapConfigMaps is a ConfigMapGetter over a map.
type mapConfigMaps map[string]*corev1.ConfigMap

func (m mapConfigMaps) GetConfigMap(_ context.Context, _, name string) (*corev1.ConfigMap, error) {
	if cm, ok := m[name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
}

// The remount that every pod sync does when nothing changed, for `make
// bench`: "compared" is the full path (the writer reads the volume back and
// finds it equal), "stamped" the path a remount takes once the volume is
// stamped (the payload's hash, then a few lstat calls). Sizes as the
// writer's benchmarks: 4 keys of 256 B, and 8 of 128 KiB.
func BenchmarkRemountUnchanged(b *testing.B) {
	for _, size := range []struct {
		name        string
		keys, bytes int
	}{{"small", 4, 256}, {"1MiB", 8, 128 << 10}} {
		data := map[string]string{}
		for i := range size.keys {
			data[fmt.Sprintf("key-%02d", i)] = strings.Repeat("x", size.bytes)
		}
		for _, stamped := range []bool{false, true} {
			name := size.name + "/compared"
			if stamped {
				name = size.name + "/stamped"
			}
			b.Run(name, func(b *testing.B) {
				clk := testingclock.NewFakeClock(time.Now().Add(time.Minute)) // no racy stamps
				cms := mapConfigMaps{"cfg": &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg", ResourceVersion: "1"}, Data: data}}
				c, err := New(Options{ConfigMaps: cms, Clock: clk})
				if err != nil {
					b.Fatal(err)
				}
				key := cache.VolumeKey{PodUID: "p", Volume: "v"}
				spec := podrefs.KeptVolume{Name: "v", Plugin: podrefs.PluginConfigMap, ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}
				c.AddVolume(cache.DesiredVolume{Key: key, Request: &cache.Request{Namespace: "ns"}, Spec: spec, Dir: filepath.Join(b.TempDir(), "v")})
				for range 2 { // mounted, then stamped by a remount
					c.actual.MarkRemountRequired(key)
					c.reconciler.HandOver(key)
					c.reconciler.Pass(context.Background())
					c.reconciler.Wait()
				}
				v, ok := c.actual.Get(key)
				if !ok {
					b.Fatalf("not mounted: %v", c.Volumes())
				}
				op := reconciler.Operation{Kind: reconciler.Remount, Key: v.Key, Request: v.Request, Spec: v.Spec, Dir: v.Dir, LastHash: v.ContentHash}
				if stamped {
					op.LastStamp = v.Stamp
				}
				setUp := &executor{objects: objectSources{configMaps: cms}, clock: clk, atomicWrite: atomicwriter.Write}
				b.SetBytes(int64(size.keys * size.bytes))
				for b.Loop() {
					if res, err := setUp.SetUp(context.Background(), klog.Background(), op); err != nil || res.Wrote {
						b.Fatalf("wrote %v, %v", res.Wrote, err)
					}
				}
			})
		}
	}
}
