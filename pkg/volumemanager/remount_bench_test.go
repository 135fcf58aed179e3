package volumemanager

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/reconciler"
)

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
				h := newHarness(b)
				h.clock.SetTime(time.Now().Add(time.Minute)) // no racy stamps
				h.cms.set("cfg", data)
				pod := newPod("p", volumeSpec{name: "v", configMap: "cfg"})
				h.sync(pod)
				h.sync(pod) // stamped now
				v, _ := h.m.actual.Get(cache.VolumeKey{PodUID: pod.UID, Volume: "v"})
				op := reconciler.Operation{Kind: reconciler.Remount, Key: v.Key, Request: v.Request, Spec: v.Spec, Dir: v.Dir, LastHash: v.ContentHash}
				if stamped {
					op.LastStamp = v.Stamp
				}
				setUp := &executor{configMaps: h.cms, clock: h.clock}
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
