package volumemanager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/core"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/reconciler"
)

// A volume let go while its mount is in flight is gone when
// WaitForVolumeGone returns: the wait outlasts the mount, and the unmount
// that follows it.
func TestWaitForVolumeGoneOutlastsAMountInFlight(t *testing.T) {
	h := newHarness(t)
	blocking := &blockingConfigMaps{fakeConfigMaps: h.cms, reading: make(chan struct{}, 10), release: make(chan struct{})}
	h.m = h.newManager(func(o *Options) { o.Core.ConfigMaps = blocking })
	h.cms.set("cfg", map[string]string{"a": "1"})
	pod := newPod("p", volumeSpec{name: "v", configMap: "cfg"})
	key, dir := addPublished(t, h.m.core, pod)
	h.m.core.Reconciler().Pass(context.Background())
	<-blocking.reading // the mount is in flight
	h.m.core.RemoveVolume(key)
	done := make(chan error, 1)
	go func() { done <- h.m.core.WaitForVolumeGone(context.Background(), key) }()
	h.clock.Step(core.SourcePollInterval)
	time.Sleep(50 * time.Millisecond) // a wait that ignored the mount would end here
	if len(done) > 0 {
		t.Fatalf("the wait ended while the mount was in flight: %v", <-done)
	}
	close(blocking.release)
	testutil.WaitFor(t, "the wait to end", func() bool {
		h.step()
		h.clock.Step(core.SourcePollInterval)
		return len(done) > 0
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the volume's directory is still there after the wait: %v", err)
	}
}

// A core that wakes at once (the CSI driver's) writes each change as it is
// reported, with the clock standing still; one that keeps the kubelet's
// pacing (the agent's) writes a second change within half a period only
// when that half period has passed.
func TestACoreWritesChangesAsItsWakeSays(t *testing.T) {
	for _, tc := range []struct {
		wake        reconciler.Wake
		secondWaits bool
	}{{reconciler.WakeAtOnce, false}, {reconciler.WakeHalfPeriod, true}} {
		t.Run(fmt.Sprint(tc.wake), func(t *testing.T) {
			h := newHarness(t)
			c, err := core.New(core.Options{ConfigMaps: h.cms, Clock: h.clock, Wake: tc.wake})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { c.Run(ctx); close(done) }()
			t.Cleanup(func() { cancel(); <-done })
			h.cms.set("cfg", map[string]string{"a": "1"})
			key, dir := addPublished(t, c, newPod("p"))
			holds := func(want string) func() bool {
				return func() bool {
					data, _ := os.ReadFile(filepath.Join(dir, "a"))
					return string(data) == want
				}
			}
			// Mounted and recorded: a change during the mount's operation
			// would be read again only when the clock moves on.
			testutil.WaitFor(t, "the first mount", func() bool {
				h.clock.Step(10 * time.Millisecond)
				return holds("1")() && c.Actual().Has(key) && !c.Reconciler().InFlight(key)
			})

			change := func(value string) {
				h.cms.set("cfg", map[string]string{"a": value})
				c.RemountConfigMap("ns", "cfg")
			}
			change("2") // the clock stands still from here
			testutil.WaitFor(t, "the first change, off the grid", holds("2"))
			change("3")
			if tc.secondWaits {
				time.Sleep(100 * time.Millisecond) // a core that did not wait would have written it by now
				if holds("3")() {
					t.Fatal("the second change was written within half a period of the first")
				}
				h.clock.Step(50 * time.Millisecond)
			}
			testutil.WaitFor(t, "the second change", holds("3"))
		})
	}
}

// addPublished makes m want a volume "published" of pod, reading the
// ConfigMap cfg, in a directory of its own, as a CSI publish call does.
func addPublished(t *testing.T, m *core.Core, pod *corev1.Pod) (cache.VolumeKey, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "target")
	key := cache.VolumeKey{PodUID: pod.UID, Volume: "published"}
	spec := podrefs.KeptVolume{Name: "published", Plugin: "csi", ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}
	m.AddVolume(cache.DesiredVolume{Key: key, Request: &cache.Request{Namespace: pod.Namespace, Subject: pod}, Spec: spec, Dir: dir})
	return key, dir
}
