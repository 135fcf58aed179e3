package volumemanager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/core"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/reconciler"
)

// fakeConfigMaps is a core.ConfigMapGetter backed by a map, with injectable errors.
type fakeConfigMaps struct {
	mu   sync.Mutex
	cms  map[string]*corev1.ConfigMap
	errs map[string]error
}

func (f *fakeConfigMaps) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errs[name]; err != nil {
		return nil, err
	}
	cm, ok := f.cms[name]
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
	}
	return cm.DeepCopy(), nil
}

func (f *fakeConfigMaps) set(name string, data map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rv := 1
	if old, ok := f.cms[name]; ok {
		fmt.Sscan(old.ResourceVersion, &rv)
		rv++
	}
	f.cms[name] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: fmt.Sprint(rv)}, Data: data}
}

func (f *fakeConfigMaps) remove(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.cms, name)
}

func (f *fakeConfigMaps) fail(name string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[name] = err
}

type fakeEvents struct {
	mu     sync.Mutex
	events []string
}

func (f *fakeEvents) Eventf(_ runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, eventtype+" "+reason+" "+fmt.Sprintf(messageFmt, args...))
}

type harness struct {
	t      testing.TB
	m      *Manager
	clock  *testingclock.FakeClock
	cms    *fakeConfigMaps
	events *fakeEvents
	writes *countingRecorder
	root   string
	// active is the test's set of active pods; publish hands it to the
	// manager when it changed since the last hand-over (published).
	active    sets.Set[types.UID]
	activeMu  sync.Mutex
	published sets.Set[types.UID]
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	h := &harness{
		t:      t,
		clock:  testingclock.NewFakeClock(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)),
		cms:    &fakeConfigMaps{cms: map[string]*corev1.ConfigMap{}, errs: map[string]error{}},
		events: &fakeEvents{},
		writes: &countingRecorder{},
		root:   t.TempDir(),
		active: sets.New[types.UID](),
	}
	h.m = h.newManager()
	return h
}

// newManager returns a manager on the harness's fakes, changed by opts.
func (h *harness) newManager(opts ...func(*Options)) *Manager {
	o := Options{RootDir: h.root, Core: core.Options{ConfigMaps: h.cms, Events: h.events, Clock: h.clock, Recorder: h.writes}}
	for _, opt := range opts {
		opt(&o)
	}
	m, err := New(o)
	if err != nil {
		h.t.Fatal(err)
	}
	h.activeMu.Lock()
	h.published = nil // a new manager has been handed nothing yet
	h.activeMu.Unlock()
	return m
}

// publish tells the manager how the test's active pods changed since the
// last time, pod by pod, as the agent does at each pod event, and that the
// pod source has synced.
func (h *harness) publish() {
	h.activeMu.Lock()
	defer h.activeMu.Unlock()
	if h.published == nil {
		h.published = sets.New[types.UID]()
		defer h.m.PodsSynced()
	}
	for uid := range h.active.Difference(h.published) {
		h.m.PodActive(uid)
	}
	for uid := range h.published.Difference(h.active) {
		h.m.PodInactive(uid)
	}
	h.published = h.active.Clone()
}

// stepToRetry moves the clock to the retry of pod's failing volume.
func (h *harness) stepToRetry(pod types.UID, volume string) {
	h.t.Helper()
	f, ok := h.m.core.Failure(cache.VolumeKey{PodUID: pod, Volume: volume})
	if !ok {
		h.t.Fatalf("volume %s/%s has not failed", pod, volume)
	}
	h.clock.SetTime(f.RetryAt)
}

// setActive changes the test's active pods and hands them in.
func (h *harness) setActive(change func(active sets.Set[types.UID])) {
	h.activeMu.Lock()
	change(h.active)
	h.activeMu.Unlock()
	h.publish()
}

// step hands in the active pods if they changed, runs one populator and
// one reconciler pass and waits for the operations they started.
func (h *harness) step() {
	h.publish()
	h.m.populator.Pass()
	h.m.core.Reconciler().Pass(context.Background())
	h.m.core.Reconciler().Wait()
}

// stepAndPoll is step, then the time of one poll of the waits.
func (h *harness) stepAndPoll() {
	h.step()
	h.clock.Step(waitPollInterval)
}

// sync does what a pod sync does to the volume manager (mark); then one
// loop pass.
func (h *harness) sync(pod *corev1.Pod) {
	h.mark(pod)
	h.step()
}

// mark makes pod active and marks it for reprocessing, as a sync's
// WaitForAttachAndMount does, without waiting (the wait is tested
// separately).
func (h *harness) mark(pod *corev1.Pod) {
	h.setActive(func(active sets.Set[types.UID]) { active.Insert(pod.UID) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = h.m.WaitForAttachAndMount(ctx, pod)
}

func (h *harness) read(pod *corev1.Pod, volume, path string) (string, error) {
	data, err := os.ReadFile(filepath.Join(podrefs.VolumeDir(h.root, string(pod.UID), podrefs.PluginConfigMap, volume), path))
	return string(data), err
}

func (h *harness) mustRead(pod *corev1.Pod, volume, path, want string) {
	h.t.Helper()
	got, err := h.read(pod, volume, path)
	if err != nil || got != want {
		h.t.Errorf("%s/%s: got %q, %v; want %q", volume, path, got, err, want)
	}
}

func (h *harness) visible(pod *corev1.Pod, volume string) []string {
	entries, err := os.ReadDir(podrefs.VolumeDir(h.root, string(pod.UID), podrefs.PluginConfigMap, volume))
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "..") {
			names = append(names, e.Name())
		}
	}
	return names
}

type volumeSpec struct {
	name, configMap string
	optional        bool
	items           []corev1.KeyToPath
	unmounted       bool // no container mounts it
}

func newPod(uid string, volumes ...volumeSpec) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-" + uid, UID: types.UID(uid)}}
	container := corev1.Container{Name: "c"}
	for _, v := range volumes {
		optional := v.optional
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: v.name, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: v.configMap}, Items: v.items, Optional: &optional,
			}}})
		if !v.unmounted {
			container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: v.name, MountPath: "/" + v.name})
		}
	}
	pod.Spec.Containers = []corev1.Container{container}
	return pod
}

// countingRecorder counts the generations written.
type countingRecorder struct {
	written, operations atomic.Int64
}

func (r *countingRecorder) VolumeWritten() { r.written.Add(1) }
func (r *countingRecorder) OperationDone(reconciler.OperationKind, error, time.Duration) {
	r.operations.Add(1)
}
func (r *countingRecorder) VolumesMounted(int)       {}
func (r *countingRecorder) ChangeRead(time.Duration) {}

func TestMountRemountUnmount(t *testing.T) {
	h := newHarness(t)
	h.cms.set("cfg", map[string]string{"a": "1", "b": "2"})
	pod := newPod("p1", volumeSpec{name: "v", configMap: "cfg"}, volumeSpec{name: "idle", configMap: "cfg", unmounted: true})

	h.sync(pod)
	h.mustRead(pod, "v", "a", "1")
	h.mustRead(pod, "v", "b", "2")
	if _, err := os.Stat(podrefs.VolumeDir(h.root, "p1", podrefs.PluginConfigMap, "idle")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a volume that no container mounts was set up")
	}

	if n := h.writes.written.Load(); n != 1 {
		t.Errorf("after the first mount: %d generations written, want 1", n)
	}
	h.sync(pod)
	if n := h.writes.written.Load(); n != 1 {
		t.Errorf("after a remount of unchanged content: %d generations written, want 1", n)
	}

	// A change reaches disk at the next sync, not before.
	h.cms.set("cfg", map[string]string{"a": "changed"})
	h.step()
	h.mustRead(pod, "v", "a", "1")
	h.sync(pod)
	h.mustRead(pod, "v", "a", "changed")
	if got := h.visible(pod, "v"); fmt.Sprint(got) != "[a]" {
		t.Errorf("visible files: got %v, want [a]", got)
	}
	if vs := h.m.Volumes(); len(vs) != 1 || vs[0].ResourceVersion != "2" || vs[0].State != "mounted" {
		t.Errorf("Volumes(): got %+v", vs)
	}

	// Teardown (the pod was deleted) removes the directory.
	h.setActive(func(active sets.Set[types.UID]) { active.Delete(pod.UID) })
	done := make(chan error, 1)
	go func() { done <- h.m.WaitForUnmount(context.Background(), pod) }()
	testutil.WaitFor(t, "the volume manager's state", func() bool { h.stepAndPoll(); return len(h.m.Volumes()) == 0 })
	testutil.WaitFor(t, "the volume manager's state", func() bool { h.clock.Step(waitPollInterval); return len(done) > 0 })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(podrefs.VolumeDir(h.root, "p1", podrefs.PluginConfigMap, "v")); !errors.Is(err, os.ErrNotExist) {
		t.Error("volume directory still exists after unmount")
	}
	if n, err := h.m.RemoveOrphanedPodDirs(); err != nil || n != 1 {
		t.Errorf("RemoveOrphanedPodDirs: removed %d, %v; want 1", n, err)
	}
}

func TestWaitForAttachAndMount(t *testing.T) {
	h := newHarness(t)
	h.cms.set("cfg", map[string]string{"a": "1"})
	pod := newPod("p1", volumeSpec{name: "v", configMap: "cfg"})
	h.setActive(func(active sets.Set[types.UID]) { active.Insert(pod.UID) })
	done := make(chan error, 1)
	go func() { done <- h.m.WaitForAttachAndMount(context.Background(), pod) }()
	testutil.WaitFor(t, "the volume manager's state", func() bool { h.step(); return len(h.m.Volumes()) == 1 })
	// Mounted, but the wait returns at its next poll, as the kubelet's
	// does, not at the mount: pods that started together end together.
	time.Sleep(20 * time.Millisecond)
	if len(done) != 0 {
		t.Fatal("the wait returned between two polls")
	}
	testutil.WaitFor(t, "the volume manager's state", func() bool { h.clock.Step(waitPollInterval); return len(done) > 0 })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Steady state: a volume awaiting its remount counts as mounted.
	if err := h.m.WaitForAttachAndMount(context.Background(), pod); err != nil {
		t.Fatal(err)
	}

	// A volume that cannot mount makes the wait fail, saying why, as soon
	// as it has failed once: no need to wait out the 2-minute timeout.
	bad := newPod("p2", volumeSpec{name: "v", configMap: "missing"})
	h.setActive(func(active sets.Set[types.UID]) { active.Insert(bad.UID) })
	stop := make(chan struct{})
	stepped := make(chan struct{})
	go func() {
		defer close(stepped)
		for {
			select {
			case <-stop:
				return
			default:
				h.stepAndPoll()
				time.Sleep(time.Millisecond)
			}
		}
	}()
	err := h.m.WaitForAttachAndMount(context.Background(), bad)
	close(stop)
	<-stepped
	var unmounted *UnmountedError
	if !errors.As(err, &unmounted) || !slices.Equal(unmounted.Volumes, []string{"v"}) || core.CauseOf(err) != core.CauseObjectNotFound {
		t.Errorf("got %v (cause %v), want volume v unmounted, its ConfigMap not found", err, core.CauseOf(err))
	}
}

// A wait ends at one of its polls, never on the mount itself: waits that
// begin together end together even when their volumes reach disk in
// different passes, which keeps pods that start together on the same
// pod-worker ticks, sharing their GETs, as the kubelet's do
// (waitPollInterval). Ending a wait on the change instead would split them.
func TestWaitsEndAtAPollNotOnTheMount(t *testing.T) {
	h := newHarness(t)
	h.cms.set("cfg", map[string]string{"a": "1"})
	a, b := newPod("a", volumeSpec{name: "v", configMap: "cfg"}), newPod("b", volumeSpec{name: "v", configMap: "cfg"})
	h.setActive(func(active sets.Set[types.UID]) { active.Insert(a.UID, b.UID) })
	done := make(chan string, 2)
	desired := func(n int) func() bool {
		return func() bool { return h.m.populator.Backlog() == 1 }
	}
	// a's volume is mounted in one pass, b's in the next.
	for i, pod := range []*corev1.Pod{a, b} {
		go func() {
			if err := h.m.WaitForAttachAndMount(context.Background(), pod); err == nil {
				done <- pod.Name
			}
		}()
		testutil.WaitFor(t, "the volume manager's state", desired(i+1))
		h.step()
	}
	if n := len(h.m.Volumes()); n != 2 {
		t.Fatalf("%d volumes on disk, want both", n)
	}
	time.Sleep(100 * time.Millisecond)
	if len(done) != 0 {
		t.Fatalf("%s's wait ended on its mount, before a poll", <-done)
	}
	testutil.WaitFor(t, "the volume manager's state", func() bool { h.clock.Step(waitPollInterval); return len(done) == 2 })
}

// An operation already running when a sync's wait began may have read the
// world as it was before: its failure does not fail the wait (as it does
// not fail WaitForVolume); the wait goes on to the retry, which mounts.
func TestWaitIgnoresAFailureThatStartedBeforeIt(t *testing.T) {
	h := newHarness(t)
	blocking := &blockingConfigMaps{fakeConfigMaps: h.cms, reading: make(chan struct{}, 10), release: make(chan struct{})}
	h.m = h.newManager(func(o *Options) { o.Core.ConfigMaps = blocking })
	pod := newPod("p", volumeSpec{name: "v", configMap: "cfg"})
	h.mark(pod)
	h.publish()
	h.m.populator.Pass()
	h.m.core.Reconciler().Pass(context.Background())
	<-blocking.reading // the mount reads before the ConfigMap exists
	h.clock.Step(time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- h.m.WaitForAttachAndMount(context.Background(), pod) }()
	h.cms.set("cfg", map[string]string{"a": "1"})
	close(blocking.release)
	h.m.core.Reconciler().Wait()
	if _, ok := h.m.core.Failure(cache.VolumeKey{PodUID: "p", Volume: "v"}); !ok {
		t.Fatal("the first mount did not fail; the test proves nothing")
	}
	testutil.WaitFor(t, "the wait to end", func() bool {
		h.clock.Step(waitPollInterval)
		h.step()
		return len(done) > 0
	})
	if err := <-done; err != nil {
		t.Errorf("the wait failed on a mount that began before it: %v", err)
	}
	h.mustRead(pod, "v", "a", "1")
}
