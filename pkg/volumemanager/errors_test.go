package volumemanager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// Every row of the error table in docs/kubelet-behaviour.md, for a first mount and for a remount.
func TestErrorTable(t *testing.T) {
	tests := []struct {
		name     string
		optional bool
		items    []corev1.KeyToPath
		// breakIt makes the next read fail in this row's way.
		breakIt func(cms *fakeConfigMaps)
		// firstMount: the visible files after a first mount (nil: no volume).
		firstMount []string
		// remount: the visible files after a remount of a mounted volume
		// (nil: the row's pod spec can never mount, so there is no remount).
		remount []string
		// wantErr is in the event and the status when the operation fails.
		wantErr string
	}{
		{
			name: "missing, optional", optional: true,
			breakIt:    func(cms *fakeConfigMaps) { cms.remove("cfg") },
			firstMount: []string{}, remount: []string{},
		},
		{
			name:       "missing, not optional",
			breakIt:    func(cms *fakeConfigMaps) { cms.remove("cfg") },
			firstMount: nil, remount: []string{"a"}, wantErr: `configmaps "cfg" not found`,
		},
		{
			name:       "other GET error",
			breakIt:    func(cms *fakeConfigMaps) { cms.fail("cfg", apierrors.NewServiceUnavailable("apiserver is down")) },
			firstMount: nil, remount: []string{"a"}, wantErr: "apiserver is down",
		},
		{
			name:       "listed key missing, not optional",
			items:      []corev1.KeyToPath{{Key: "a", Path: "a"}},
			breakIt:    func(cms *fakeConfigMaps) { cms.set("cfg", map[string]string{"other": "x"}) },
			firstMount: nil, remount: []string{"a"}, wantErr: `has no key "a"`,
		},
		{
			name: "listed key missing, optional", optional: true,
			items:      []corev1.KeyToPath{{Key: "a", Path: "a"}},
			breakIt:    func(cms *fakeConfigMaps) { cms.set("cfg", map[string]string{"other": "x"}) },
			firstMount: []string{}, remount: []string{},
		},
		{
			name:       "path the writer cannot honour",
			items:      []corev1.KeyToPath{{Key: "a", Path: "a"}, {Key: "b", Path: "a/b"}},
			breakIt:    func(cms *fakeConfigMaps) { cms.set("cfg", map[string]string{"a": "1", "b": "2"}) },
			firstMount: nil, remount: nil, wantErr: "both a file and a directory",
		},
		{
			name:       "path escaping the volume",
			items:      []corev1.KeyToPath{{Key: "a", Path: "../../etc/a"}},
			breakIt:    func(cms *fakeConfigMaps) {},
			firstMount: nil, remount: nil, wantErr: "must not contain '..'",
		},
	}
	for _, tt := range tests {
		spec := volumeSpec{name: "v", configMap: "cfg", optional: tt.optional, items: tt.items}
		t.Run(tt.name+", first mount", func(t *testing.T) {
			h := newHarness(t)
			h.cms.set("cfg", map[string]string{"a": "1"})
			tt.breakIt(h.cms)
			pod := newPod("p", spec)
			h.sync(pod)
			checkVisible(t, h, pod, tt.firstMount)
			checkFailure(t, h, tt.wantErr)
		})
		if tt.remount == nil {
			continue
		}
		t.Run(tt.name+", remount", func(t *testing.T) {
			h := newHarness(t)
			h.cms.set("cfg", map[string]string{"a": "1"})
			pod := newPod("p", spec)
			h.sync(pod)
			h.mustRead(pod, "v", "a", "1")
			tt.breakIt(h.cms)
			h.sync(pod)
			checkVisible(t, h, pod, tt.remount)
			if len(tt.remount) > 0 {
				h.mustRead(pod, "v", "a", "1") // the old content, intact
			}
			checkFailure(t, h, tt.wantErr)
		})
	}
}

func checkVisible(t *testing.T, h *harness, pod *corev1.Pod, want []string) {
	t.Helper()
	_, err := os.Stat(podrefs.VolumeDir(h.root, string(pod.UID), podrefs.PluginConfigMap, "v"))
	if want == nil {
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("volume directory exists (%v), want no volume", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("volume directory missing: %v", err)
	}
	if got := h.visible(pod, "v"); fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
		t.Errorf("visible files: got %v, want %v", got, want)
	}
}

func checkFailure(t *testing.T, h *harness, wantErr string) {
	t.Helper()
	h.events.mu.Lock()
	events := strings.Join(h.events.events, "\n")
	h.events.mu.Unlock()
	if wantErr == "" {
		if events != "" {
			t.Errorf("unexpected events: %s", events)
		}
		return
	}
	if !strings.Contains(events, "Warning FailedMount") || !strings.Contains(events, wantErr) {
		t.Errorf("events %q: want a FailedMount warning containing %q", events, wantErr)
	}
	var status string
	for _, v := range h.m.Volumes() {
		status += v.LastError
	}
	if !strings.Contains(status, wantErr) {
		t.Errorf("Volumes() errors %q: want %q", status, wantErr)
	}
}

// A failing volume backs off 500 ms, doubling, and a success resets it.
func TestBackoff(t *testing.T) {
	h := newHarness(t)
	pod := newPod("p", volumeSpec{name: "v", configMap: "cfg"})
	h.sync(pod)
	attempts := func() int {
		h.events.mu.Lock()
		defer h.events.mu.Unlock()
		return len(h.events.events)
	}
	if attempts() != 1 {
		t.Fatalf("attempts after first pass: %d, want 1", attempts())
	}
	h.step()
	h.clock.Step(499 * time.Millisecond)
	h.step()
	if attempts() != 1 {
		t.Fatalf("retried within 500 ms: %d attempts", attempts())
	}
	h.clock.Step(time.Millisecond)
	h.step()
	if attempts() != 2 {
		t.Fatalf("attempts at 500 ms: %d, want 2", attempts())
	}
	// /debug/volumes says when the next try comes: a second after this one.
	if vs := h.m.Volumes(); len(vs) != 1 || vs[0].RetryAt == nil || !vs[0].RetryAt.Equal(h.clock.Now().Add(time.Second)) {
		t.Errorf("the failing volume's status: %+v; want a retry at %v", vs, h.clock.Now().Add(time.Second))
	}
	h.clock.Step(999 * time.Millisecond)
	h.step()
	if attempts() != 2 {
		t.Fatalf("retried within 1 s of the second failure: %d attempts", attempts())
	}
	h.cms.set("cfg", map[string]string{"a": "1"})
	h.clock.Step(time.Millisecond)
	h.step()
	h.mustRead(pod, "v", "a", "1")
	if vs := h.m.Volumes(); len(vs) != 1 || vs[0].State != "mounted" || vs[0].LastError != "" || vs[0].RetryAt != nil {
		t.Errorf("after recovery: %+v", vs)
	}
}

// One bad volume never holds up another, in the same pod or another pod.
func TestFailuresStayWithTheirVolume(t *testing.T) {
	h := newHarness(t)
	h.cms.set("good", map[string]string{"k": "v"})
	mixed := newPod("mixed", volumeSpec{name: "bad", configMap: "missing"}, volumeSpec{name: "good", configMap: "good"})
	other := newPod("other", volumeSpec{name: "good", configMap: "good"})
	h.sync(mixed)
	h.sync(other)
	h.mustRead(mixed, "good", "k", "v")
	h.mustRead(other, "good", "k", "v")
}

// After a restart, volumes on disk are adopted, not deleted and remounted:
// files stay in place throughout. Volumes of pods gone meanwhile go.
func TestReconstructAfterRestart(t *testing.T) {
	h := newHarness(t)
	h.cms.set("cfg", map[string]string{"a": "1"})
	kept := newPod("kept", volumeSpec{name: "v", configMap: "cfg"})
	gone := newPod("gone", volumeSpec{name: "v", configMap: "cfg"})
	h.sync(kept)
	h.sync(gone)
	// A crash leftover inside the kept volume.
	stale := filepath.Join(podrefs.VolumeDir(h.root, "kept", podrefs.PluginConfigMap, "v"), "..data_tmp")
	os.Symlink("..nowhere", stale)

	// Restart: a new manager on the same root; gone was deleted meanwhile.
	h.setActive(func(active sets.Set[types.UID]) { active.Delete(types.UID("gone")) })
	h.m = h.newManager()
	if n, err := h.m.reconstruct(); err != nil || n != 2 {
		t.Fatalf("reconstruct: %d volumes, %v; want 2", n, err)
	}
	if _, err := os.Lstat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Error("start-up did not remove the stale ..data_tmp")
	}
	// Before kept's first sync, its volume stays; gone's goes.
	h.step()
	h.mustRead(kept, "v", "a", "1")
	if _, err := os.Stat(podrefs.VolumeDir(h.root, "gone", podrefs.PluginConfigMap, "v")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the volume of a pod deleted while the agent was down is still there")
	}
	// kept's first sync adopts its volume and remounts it with new data.
	h.cms.set("cfg", map[string]string{"a": "2"})
	h.sync(kept)
	h.mustRead(kept, "v", "a", "2")
	if vs := h.m.Volumes(); len(vs) != 1 || vs[0].Pod != "ns/pod-kept" || vs[0].ResourceVersion != "2" {
		t.Errorf("Volumes() after adoption: %+v", vs)
	}
}

func TestRemountConfigMap(t *testing.T) {
	h := newHarness(t)
	h.cms.set("cfg", map[string]string{"a": "1"})
	pod := newPod("p", volumeSpec{name: "v", configMap: "cfg"})
	h.sync(pod)
	h.cms.set("cfg", map[string]string{"a": "2"})
	h.m.RemountConfigMap("ns", "other")
	h.step()
	h.mustRead(pod, "v", "a", "1")
	h.m.RemountConfigMap("ns", "cfg")
	h.step()
	h.mustRead(pod, "v", "a", "2")
}

// runningWithOneVolume mounts one pod's volume of ConfigMap cfg, then runs
// the manager's loops (on the fake clock) until the test ends.
func runningWithOneVolume(t *testing.T) (*harness, *corev1.Pod) {
	h := newHarness(t)
	h.cms.set("cfg", map[string]string{"a": "1"})
	pod := newPod("p", volumeSpec{name: "v", configMap: "cfg"})
	h.sync(pod)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.m.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return h, pod
}

// A change seen by the watch does not wait for the reconciler's next tick:
// RemountConfigMap wakes it. The fake clock never moves here, so no tick
// ever comes.
func TestRemountConfigMapWakesTheReconciler(t *testing.T) {
	h, pod := runningWithOneVolume(t)

	h.cms.set("cfg", map[string]string{"a": "2"})
	time.Sleep(200 * time.Millisecond)
	h.mustRead(pod, "v", "a", "1") // nothing asked for a remount

	h.m.RemountConfigMap("ns", "cfg")
	testutil.WaitFor(t, "the volume manager's state", func() bool {
		got, err := h.read(pod, "v", "a")
		return err == nil && got == "2"
	})
}

// Under a storm the woken passes are spaced half a period apart: a second
// change right after a woken pass waits for the spacing, then lands.
func TestWokenPassesAreSpaced(t *testing.T) {
	h, pod := runningWithOneVolume(t)
	landed := func(want string) func() bool {
		return func() bool {
			got, err := h.read(pod, "v", "a")
			return err == nil && got == want
		}
	}

	h.cms.set("cfg", map[string]string{"a": "2"})
	h.m.RemountConfigMap("ns", "cfg")
	testutil.WaitFor(t, "the volume manager's state", landed("2"))
	h.cms.set("cfg", map[string]string{"a": "3"})
	h.m.RemountConfigMap("ns", "cfg")
	time.Sleep(200 * time.Millisecond)
	h.mustRead(pod, "v", "a", "2") // within the spacing: not yet
	h.clock.Step(waitPollInterval) // past it
	testutil.WaitFor(t, "the volume manager's state", landed("3"))
}
