package volumemanager

import (
	"context"
	"errors"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// pendingWork is what the next passes will look at.
func (h *harness) pendingWork() (unprocessed, pending int) {
	return h.m.populator.Backlog(), h.m.core.Reconciler().Backlog()
}

// The passes look only at what changed: nothing once every volume is
// mounted, a marked pod's volumes after its sync, and a volume whose
// ConfigMap changed under watch.
func TestPassesLookOnlyAtWhatChanged(t *testing.T) {
	h := newHarness(t)
	h.cms.set("a", map[string]string{"k": "1"})
	h.cms.set("b", map[string]string{"k": "1"})
	one := newPod("one", volumeSpec{name: "x", configMap: "a"}, volumeSpec{name: "y", configMap: "b"})
	two := newPod("two", volumeSpec{name: "x", configMap: "a"})
	h.sync(one)
	h.sync(two)
	if u, p := h.pendingWork(); u != 0 || p != 0 {
		t.Fatalf("after the mounts: %d pods unprocessed, %d volumes pending; want none", u, p)
	}

	// A sync marks its pod; the populator hands over that pod's volumes
	// and no other.
	h.mark(one)
	if u, _ := h.pendingWork(); u != 1 {
		t.Fatalf("after one sync: %d pods unprocessed, want 1", u)
	}
	h.m.populator.Pass()
	if u, p := h.pendingWork(); u != 0 || p != 2 {
		t.Fatalf("after the populator: %d pods unprocessed, %d volumes pending; want 0 and 2", u, p)
	}
	h.cms.set("a", map[string]string{"k": "2"})
	h.m.core.Reconciler().Pass(context.Background())
	h.m.core.Reconciler().Wait()
	h.mustRead(one, "x", "k", "2")
	h.mustRead(two, "x", "k", "1") // not synced, not watched: not remounted

	// A change seen by a watch hands over the volumes that read it.
	h.m.RemountConfigMap("ns", "a")
	if _, p := h.pendingWork(); p != 2 {
		t.Fatalf("after RemountConfigMap: %d volumes pending, want 2 (one's x, two's x)", p)
	}
	h.step()
	h.mustRead(two, "x", "k", "2")
	if u, p := h.pendingWork(); u != 0 || p != 0 {
		t.Fatalf("in steady state: %d pods unprocessed, %d volumes pending; want none", u, p)
	}
}

// The populator compares the active pods with the desired ones only when
// a set has been handed in since its last comparison; when one has, a pod
// that left it loses its volumes.
func TestActivePodsComparedWhenHandedIn(t *testing.T) {
	h := newHarness(t)
	h.cms.set("cfg", map[string]string{"k": "1"})
	kept := newPod("kept", volumeSpec{name: "v", configMap: "cfg"})
	gone := newPod("gone", volumeSpec{name: "v", configMap: "cfg"})
	h.sync(kept)
	h.sync(gone)

	// The test's set changes, but nothing is handed in: not looked at.
	h.activeMu.Lock()
	h.active.Delete(types.UID("gone"))
	h.activeMu.Unlock()
	h.m.populator.Pass()
	h.m.core.Reconciler().Pass(context.Background())
	h.m.core.Reconciler().Wait()
	if _, err := h.read(gone, "v", "k"); err != nil {
		t.Fatalf("a pass with no new set of active pods unmounted a volume: %v", err)
	}

	h.step() // hands the set in
	if _, err := os.Stat(podrefs.VolumeDir(h.root, "gone", podrefs.PluginConfigMap, "v")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the volume of a pod that left the active set is still there: %v", err)
	}
	h.mustRead(kept, "v", "k", "1")
	if u, p := h.pendingWork(); u != 0 || p != 0 {
		t.Errorf("after the unmount: %d pods unprocessed, %d volumes pending; want none", u, p)
	}
}

// A sync that races with its pod's deletion (the set already without the
// pod, at a version the populator has seen) mounts nothing.
func TestSyncOfAnInactivePodMountsNothing(t *testing.T) {
	h := newHarness(t)
	h.cms.set("cfg", map[string]string{"k": "1"})
	h.step() // the populator has seen the (empty) active set
	pod := newPod("late", volumeSpec{name: "v", configMap: "cfg"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = h.m.WaitForAttachAndMount(ctx, pod)
	h.step()
	if _, err := os.Stat(podrefs.VolumeDir(h.root, "late", podrefs.PluginConfigMap, "v")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a pod not in the active set got its volume: %v", err)
	}
	if len(h.m.Volumes()) != 0 {
		t.Errorf("Volumes() = %+v, want none", h.m.Volumes())
	}
}

// A pod that the agent hands in and whose sync marks it while the
// populator's passes run is never dropped as deleted: the set with the pod
// is in place before the mark, so whichever pass processes the mark
// compares with a set that holds the pod.
func TestPodMarkedDuringAPassIsNotDropped(t *testing.T) {
	h := newHarness(t)
	h.cms.set("cfg", map[string]string{"k": "1"})
	h.sync(newPod("before", volumeSpec{name: "v", configMap: "cfg"}))
	added := newPod("added", volumeSpec{name: "v", configMap: "cfg"})

	marked := make(chan struct{})
	go func() {
		defer close(marked)
		h.mark(added) // hands in the set with the pod, then marks it, as the agent and the pod's sync do
	}()
	passes := 0
	for done := false; !done; passes++ {
		select {
		case <-marked:
			done = true
		default:
		}
		h.m.populator.Pass()
	}
	h.step()
	h.mustRead(added, "v", "k", "1")
	t.Logf("%d populator passes ran beside the hand-over and the mark", passes)
}
