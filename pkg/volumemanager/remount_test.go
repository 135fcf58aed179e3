package volumemanager

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
)

// countWrites makes h's manager count the set-ups that go to the atomic
// writer.
func countWrites(h *harness) *int {
	n := new(int)
	recordWrites(h, func(atomicwriter.Options) { *n++ })
	return n
}

// recordWrites makes h's manager tell record of each set-up that goes to
// the atomic writer, with its options.
func recordWrites(h *harness, record func(atomicwriter.Options)) {
	h.m = h.newManager(func(o *Options) {
		o.Core.AtomicWrite = func(dir string, payload map[string]atomicwriter.FileProjection, opts atomicwriter.Options) (bool, error) {
			record(opts)
			return atomicwriter.Write(dir, payload, opts)
		}
	})
}

// Only a remount of other bytes than the volume was last given tells the
// writer that they differ: a first mount, and a remount that repairs a
// volume edited by hand, compare what is on disk.
func TestRemountOfNewBytesSkipsTheCompare(t *testing.T) {
	h := newHarness(t)
	var differs []bool
	recordWrites(h, func(o atomicwriter.Options) { differs = append(differs, o.Differs) })
	h.cms.set("cfg", map[string]string{"a": "1"})
	pod := newPod("p", volumeSpec{name: "v", configMap: "cfg"})
	dir := podrefs.VolumeDir(h.root, "p", podrefs.PluginConfigMap, "v")
	h.sync(pod)
	h.cms.set("cfg", map[string]string{"a": "2"})
	h.sync(pod)
	h.mustRead(pod, "v", "a", "2")
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("edited by hand"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.sync(pod)
	h.mustRead(pod, "v", "a", "2")
	if want := []bool{false, true, false}; fmt.Sprint(differs) != fmt.Sprint(want) {
		t.Errorf("Differs of the writes (first mount, new bytes, repair): %v, want %v", differs, want)
	}
}

// A remount that finds the same payload and an intact stamp leaves the
// disk alone; a change of the ConfigMap, a file edited by hand or a volume
// removed by hand takes the full path, which writes or repairs it.
func TestUnchangedRemountSkipsTheDisk(t *testing.T) {
	h := newHarness(t)
	// Later than any ctime the test makes, so that no stamp is racy.
	h.clock.SetTime(time.Now().Add(time.Minute))
	writes := countWrites(h)
	h.cms.set("cfg", map[string]string{"a": "1"})
	pod := newPod("p", volumeSpec{name: "v", configMap: "cfg"})
	dir := podrefs.VolumeDir(h.root, "p", podrefs.PluginConfigMap, "v")
	step := func(what string, wantWrites int, want string) {
		t.Helper()
		h.sync(pod)
		if *writes != wantWrites {
			t.Errorf("%s: %d calls of the writer so far, want %d", what, *writes, wantWrites)
		}
		h.mustRead(pod, "v", "a", want)
	}

	step("first mount", 1, "1")
	step("unchanged remount", 1, "1")
	step("unchanged remount", 1, "1")

	h.cms.set("cfg", map[string]string{"a": "2"})
	step("remount of a new version", 2, "2")
	step("unchanged remount", 2, "2")

	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("edited by hand"), 0o644); err != nil {
		t.Fatal(err)
	}
	step("remount after an edit by hand", 3, "2")
	step("unchanged remount", 3, "2")

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	step("remount after the volume was removed", 4, "2")
	step("unchanged remount", 4, "2")
}

// countingLimiter is a core.DiskLimiter of n slots that records how many were
// ever held at once.
type countingLimiter struct {
	slots          chan struct{}
	mu             sync.Mutex
	held, mostHeld int
}

func (l *countingLimiter) Acquire(ctx context.Context, _ int64) error {
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held++
	l.mostHeld = max(l.mostHeld, l.held)
	return nil
}

func (l *countingLimiter) Release(int64) {
	l.mu.Lock()
	l.held--
	l.mu.Unlock()
	<-l.slots
}

// The disk limiter bounds the operations on disk at once, and only their
// disk work: a ConfigMap read that hangs holds no slot.
func TestDiskLimiter(t *testing.T) {
	h := newHarness(t)
	limiter := &countingLimiter{slots: make(chan struct{}, 2)}
	blocking := &blockingConfigMaps{fakeConfigMaps: h.cms, reading: make(chan struct{}, 100), release: make(chan struct{}), only: "slow"}
	h.m = h.newManager(func(o *Options) { o.Core.DiskLimiter, o.Core.ConfigMaps = limiter, blocking })
	h.cms.set("cfg", map[string]string{"a": "1"})
	h.cms.set("slow", map[string]string{"a": "1"})
	var pods []*corev1.Pod
	for i := range 20 {
		pod := newPod(fmt.Sprintf("p%02d", i), volumeSpec{name: "v", configMap: "cfg"})
		pods = append(pods, pod)
		h.mark(pod)
	}
	// Two volumes whose ConfigMap read hangs until released.
	for _, uid := range []string{"hang1", "hang2"} {
		pod := newPod(uid, volumeSpec{name: "v", configMap: "slow"})
		h.mark(pod)
	}
	h.publish()
	h.m.populator.Pass()
	h.m.core.Reconciler().Pass(context.Background())
	<-blocking.reading
	<-blocking.reading
	// With both hanging reads in flight, the other twenty mount.
	deadline := time.Now().Add(10 * time.Second)
	for len(h.m.Volumes()) < len(pods) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	for _, pod := range pods {
		h.mustRead(pod, "v", "a", "1")
	}
	close(blocking.release)
	h.m.core.Reconciler().Wait()
	if limiter.mostHeld > 2 {
		t.Errorf("%d operations held the disk at once, want at most 2", limiter.mostHeld)
	}
	if n := len(h.m.Volumes()); n != len(pods)+2 {
		t.Errorf("%d volumes mounted, want %d", n, len(pods)+2)
	}
}
