// Package volumemanager keeps the ConfigMap and projected volumes of a
// node's pods on disk, with the kubelet's structure
// (docs/kubelet-behaviour.md, "Volume manager"):
//
//   - a desired state of world: the synced pods and the ConfigMap and
//     projected volumes their containers (init, regular, ephemeral) mount;
//   - an actual state of world: the volumes on disk, each with a
//     remountRequired flag;
//   - a populator that, on a 100 ms grid, re-reads pods marked for reprocessing
//     (every WaitForAttachAndMount marks its pod) and flags their mounted
//     volumes for a remount, and drops pods that are no longer active;
//   - a reconciler that, on the same grid, unmounts volumes no pod wants, mounts
//     volumes not on disk and remounts flagged ones. Each operation runs in
//     its own goroutine, one at a time per volume; a failed operation is
//     retried with per-volume exponential backoff (500 ms doubling to
//     2 m 2 s), and a success resets it. One record per volume holds that
//     state (operations.go).
//
// Both loops keep the kubelet's 100 ms grid but do work in proportion to
// what changed since their last pass, not to the number of pods: the
// populator reads the pods marked since (and compares the active pods with
// the desired ones only when that set has a new version), and the
// reconciler looks only at the volumes handed to it (by the populator,
// RemountConfigMap or an operation that ended) and at those still waiting
// for a retry or for their pod. A loop runs a pass only at the grid points
// where something gave it work since its last (loops.go): a marked pod, a
// volume handed over, a new set of active pods, or a retry's backoff coming due.
// A node where nothing changes wakes neither loop, and a change is acted on
// at the same grid point as by a loop that runs every 100 ms.
//
// The two grids are half a period apart, as the kubelet's two loops run in
// two goroutines: a sync's remount comes 50 to 150 ms after the sync marked
// its pod. The pods that one 1 s sync tick hands over register their
// ConfigMaps within milliseconds of each other, so all have registered
// before the first remount reads, and with every-sync invalidation they
// share one GET per ConfigMap, as the kubelet's pods do (with both passes
// at one point, a quarter of the sync bursts of a ConfigMap read by seven
// pods sent a second GET). Only RemountConfigMap wakes the reconciler off
// its grid, at most once per half period, so the modes that reproduce the
// kubelet keep its timing.
//
// A mount reads the ConfigMaps through ConfigMapGetter and writes the
// volume with the atomic writer (see setUp for the steps). A projected
// volume gets its configMap and downwardAPI sources; its serviceAccountToken,
// secret, clusterTrustBundle and podCertificate sources are left out, never
// fail it, and are listed in VolumeStatus.NotServed. A failed mount or
// remount emits a FailedMount event on the pod; a failed first mount leaves
// no volume, and a failed remount keeps the previous content on disk (the
// kubelet deletes it after a failed write; nodeagent does not). A missing
// optional ConfigMap gives an empty volume, or no files from that source.
//
// RemountConfigMap (the watch strategy's change notification) reaches every
// volume that reads the ConfigMap: a mounted one is remounted, one whose
// operation is in flight is read again when it ends, and a failing one is
// retried at the next pass instead of after its backoff.
//
// On start-up Run rebuilds the actual state from disk. Volumes found there
// are kept until the pod source has synced and their pod is known to be
// gone, so a restart never deletes files that a pod still uses.
package volumemanager

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ConfigMapGetter is the ConfigMap source (configmapcache.Manager).
type ConfigMapGetter interface {
	GetConfigMap(namespace, name string) (*corev1.ConfigMap, error)
}

// EventRecorder emits Kubernetes events (client-go's record.EventRecorder).
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// DiskLimiter bounds the volume operations that work on the disk at once
// (golang.org/x/sync/semaphore.Weighted).
type DiskLimiter interface {
	Acquire(ctx context.Context, n int64) error
	Release(n int64)
}

// Recorder receives the volume manager's measurements.
type Recorder interface {
	// OperationDone records one mount, remount or unmount.
	OperationDone(operation Operation, err error, duration time.Duration)
	// VolumesMounted reports how many volumes are on disk.
	VolumesMounted(n int)
	// VolumeWritten counts a mount or remount that wrote a new generation
	// to disk (most remounts find the content unchanged and write nothing).
	VolumeWritten()
}

// Options configure New.
type Options struct {
	// RootDir holds pods/<uid>/volumes/<plugin>/<volume>.
	RootDir    string
	ConfigMaps ConfigMapGetter
	// NodeAllocatable, optional, gives the node's allocatable resources,
	// which downwardAPI items report for limits a container does not set.
	NodeAllocatable func() (corev1.ResourceList, error)
	// Events and Recorder are optional.
	Events   EventRecorder
	Recorder Recorder
	// DiskLimiter, optional, is taken around each operation's disk work
	// (not its ConfigMap reads). Go gives an OS thread to every goroutine
	// blocked in a system call, so many managers in one process, each
	// writing volumes at once, can exhaust the process's threads; they
	// share one limiter, as the pods of one node share its disk.
	DiskLimiter DiskLimiter
	// Clock drives backoff and timestamps; nil means the real clock.
	Clock clock.WithTicker
	// LoopPeriod is the populator's and reconciler's period; default 100 ms.
	LoopPeriod time.Duration
	// MountTimeout bounds WaitForAttachAndMount; default 2 m 3 s, as in the
	// kubelet.
	MountTimeout time.Duration
}

// Manager is the volume manager of one node.
type Manager struct {
	opts  Options
	clock clock.WithTicker

	// mu guards the desired and actual states and everything below it, as
	// one lock: an operation runs without it and takes it to record its
	// result. While it is held the manager calls nothing outside this
	// package but the Recorder's VolumesMounted (a gauge); the active pods
	// are handed in (SetActivePods), not asked for, so no lock of a
	// caller's can be taken under it.
	mu      sync.Mutex
	desired map[types.UID]*desiredPod
	actual  map[volumeKey]*mountedVolume
	// unprocessed are the desired pods marked since the populator's last
	// pass; pending the volumes the reconciler must look at on its next
	// (populator.go, reconciler.go). They make a pass over a node where
	// nothing changed cost next to nothing.
	unprocessed sets.Set[types.UID]
	pending     sets.Set[volumeKey]
	// active is the last set of active pods handed in (SetActivePods);
	// activeChanged says the populator has not compared it with the
	// desired state yet.
	active        ActivePodSet
	activeChanged bool
	// ops holds a record for each volume with an operation in flight or
	// a last operation that failed (operations.go).
	ops     map[volumeKey]*volumeOp
	running sync.WaitGroup // the operations' goroutines
	// The populator's and the reconciler's loops (loops.go): kicked by
	// whatever gives them work, idle otherwise.
	populatorLoop, reconcilerLoop *pacedLoop
	// changeSeen wakes the reconciler when a watched ConfigMap changes,
	// so that the remount need not wait for its next grid point. Buffer of
	// one: changes that come while a pass is due coalesce into it.
	changeSeen chan struct{}
}

// New returns a Manager; call Run to start its loops.
func New(opts Options) (*Manager, error) {
	if opts.RootDir == "" || opts.ConfigMaps == nil {
		return nil, fmt.Errorf("volumemanager: RootDir and ConfigMaps are required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.LoopPeriod <= 0 {
		opts.LoopPeriod = 100 * time.Millisecond
	}
	if opts.MountTimeout <= 0 {
		opts.MountTimeout = 2*time.Minute + 3*time.Second
	}
	if opts.Recorder == nil {
		opts.Recorder = nopRecorder{}
	}
	return &Manager{
		opts:        opts,
		clock:       opts.Clock,
		desired:     map[types.UID]*desiredPod{},
		actual:      map[volumeKey]*mountedVolume{},
		ops:         map[volumeKey]*volumeOp{},
		unprocessed: sets.New[types.UID](),
		pending:     sets.New[volumeKey](),
		changeSeen:  make(chan struct{}, 1),
		// The origins are set when Run starts; kicks before then wait.
		populatorLoop:  newPacedLoop(opts.Clock, time.Time{}, opts.LoopPeriod),
		reconcilerLoop: newPacedLoop(opts.Clock, time.Time{}, opts.LoopPeriod),
	}, nil
}

// Run rebuilds the actual state from disk, then runs the populator and
// the reconciler until ctx ends, and waits for operations in flight.
func (m *Manager) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if n, err := m.reconstruct(); err != nil {
		logger.Error(err, "Reconstructing volumes from disk failed; they will be remounted as pods sync", "rootDir", m.opts.RootDir)
	} else {
		logger.Info("Reconstructed volumes from disk", "volumes", n, "rootDir", m.opts.RootDir)
	}
	now := m.clock.Now()
	m.populatorLoop.origin = now
	m.reconcilerLoop.origin = now.Add(m.opts.LoopPeriod / 2)
	m.runLoops(ctx)
	m.running.Wait()
}

// WaitForAttachAndMount adds or updates pod in the desired state, marks it
// for reprocessing (so its mounted volumes are remounted), and waits until
// every volume it mounts is on disk. A volume awaiting a remount
// counts as mounted, so in steady state this returns at once.
//
// Beyond the kubelet, which waits its full timeout (2 m 3 s) for a volume
// that cannot mount, it returns an error as soon as every missing volume
// has failed since the call began: the pod worker then retries the pod
// after its error backoff (10 s), so a broken volume delays its healthy
// siblings' remounts by seconds, not minutes.
func (m *Manager) WaitForAttachAndMount(ctx context.Context, pod *corev1.Pod) error {
	start := m.clock.Now()
	m.mu.Lock()
	m.markPod(&desiredPod{pod: pod})
	m.mu.Unlock()

	want := PodVolumes(pod)
	var failedFast error
	err := m.waitUntil(ctx, m.opts.MountTimeout, func() (bool, string) {
		var missing []string
		allFailed := true
		for name := range want {
			key := volumeKey{pod.UID, name}
			if _, ok := m.actual[key]; ok {
				continue
			}
			missing = append(missing, name)
			if o, ok := m.ops[key]; !ok || o.err == "" || o.failedAt.Before(start) {
				allFailed = false
			}
		}
		sort.Strings(missing)
		why := m.describeMissing(pod.UID, missing)
		if len(missing) > 0 && allFailed {
			failedFast = errors.New(why)
			return true, why
		}
		return len(missing) == 0, why
	})
	if err != nil {
		return err
	}
	return failedFast
}

// WaitForUnmount removes pod from the desired state and waits until all
// its volumes are gone from disk.
func (m *Manager) WaitForUnmount(ctx context.Context, pod *corev1.Pod) error {
	m.mu.Lock()
	m.dropDesired(pod.UID)
	m.mu.Unlock()
	return m.waitUntil(ctx, m.opts.MountTimeout, func() (bool, string) {
		var left []string
		for key := range m.actual {
			if key.podUID == pod.UID {
				left = append(left, key.volume)
			}
		}
		return len(left) == 0, fmt.Sprintf("volumes still mounted: %v", left)
	})
}

// RemountConfigMap makes every volume that reads namespace/name read it
// again, so a change seen by a watch reaches disk without waiting for the
// pods' next sync: mounted volumes are flagged for a remount, volumes with
// an operation in flight are read again once it ends, and failing volumes
// lose their backoff.
func (m *Manager) RemountConfigMap(namespace, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid, dp := range m.desired {
		if dp.pod.Namespace != namespace {
			continue
		}
		for volume, spec := range dp.volumes {
			if !spec.readsConfigMap(name) {
				continue
			}
			key := volumeKey{uid, volume}
			o, recorded := m.ops[key]
			if recorded && o.inFlight {
				o.changedMeanwhile = true
				continue
			}
			if v, ok := m.actual[key]; ok {
				v.remountRequired = true
			}
			if recorded {
				o.retryDelay = 0
			}
			m.handOver(key)
			m.wakeReconciler()
		}
	}
}

// wakeReconciler asks for a reconciler pass before the next tick.
func (m *Manager) wakeReconciler() {
	select {
	case m.changeSeen <- struct{}{}:
	default: // a pass is due already
	}
}

// waitPollInterval is how often WaitForAttachAndMount and WaitForUnmount
// look at the actual state, as the kubelet's do. They poll rather than wake
// on each change on purpose: pods whose syncs started together finish their
// waits together, at the same poll, and so stay on the same pod-worker
// ticks from then on and share their ConfigMaps' GETs, as the kubelet's
// pods do (docs/kubelet-behaviour.md, "Pod syncs"). The files are on disk
// as soon as the reconciler writes them either way.
const waitPollInterval = 300 * time.Millisecond

// waitUntil evaluates done (under the lock) at once and then every
// waitPollInterval, until it holds, ctx ends or timeout passes.
func (m *Manager) waitUntil(ctx context.Context, timeout time.Duration, done func() (bool, string)) error {
	check := func() (bool, string) {
		m.mu.Lock()
		defer m.mu.Unlock()
		return done()
	}
	// In steady state the first look succeeds: no timer, no ticker.
	if ok, _ := check(); ok {
		return nil
	}
	timer := m.clock.NewTimer(timeout)
	defer timer.Stop()
	poll := m.clock.NewTicker(waitPollInterval)
	defer poll.Stop()
	for {
		ok, why := check()
		if ok {
			return nil
		}
		select {
		case <-poll.C():
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", why, ctx.Err())
		case <-timer.C():
			return fmt.Errorf("timed out after %s: %s", timeout, why)
		}
	}
}

// describeMissing says which volumes are not mounted and why, if known.
// Called with m.mu held.
func (m *Manager) describeMissing(uid types.UID, missing []string) string {
	parts := make([]string, 0, len(missing))
	for _, name := range missing {
		if o, ok := m.ops[volumeKey{uid, name}]; ok && o.err != "" {
			parts = append(parts, fmt.Sprintf("%s (%s)", name, o.err))
		} else {
			parts = append(parts, name)
		}
	}
	return "unmounted volumes: " + strings.Join(parts, ", ")
}

// notifyChanged reports the number of volumes on disk after the actual
// state changed. Called with m.mu held.
func (m *Manager) notifyChanged() {
	m.opts.Recorder.VolumesMounted(len(m.actual))
}

// Volumes lists every volume on disk, and every desired volume that is
// failing to mount, sorted by pod UID and volume name.
func (m *Manager) Volumes() []VolumeStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []VolumeStatus
	for _, v := range m.actual {
		s := VolumeStatus{
			PodUID: string(v.key.podUID), Volume: v.key.volume, Plugin: v.spec.Plugin, Path: v.dir, State: StateMounted,
			ResourceVersion: v.resourceVersion, ContentHash: v.contentHash,
		}
		if o, ok := m.ops[v.key]; ok {
			s.LastError = o.err
		}
		if v.remountRequired {
			s.State = StateRemountPending
		}
		if v.pod != nil {
			s.Pod = v.pod.Namespace + "/" + v.pod.Name
			s.ConfigMaps, s.NotServed = v.spec.ConfigMapNames(), v.spec.NotServed()
		}
		out = append(out, s)
	}
	for key, o := range m.ops {
		if _, mounted := m.actual[key]; mounted || o.err == "" {
			continue
		}
		s := VolumeStatus{PodUID: string(key.podUID), Volume: key.volume, State: StateMountFailing, LastError: o.err}
		if dp, ok := m.desired[key.podUID]; ok {
			s.Pod = dp.pod.Namespace + "/" + dp.pod.Name
			if spec, ok := dp.volumes[key.volume]; ok {
				s.Plugin, s.ConfigMaps, s.NotServed = spec.Plugin, spec.ConfigMapNames(), spec.NotServed()
				s.Path = VolumeDir(m.opts.RootDir, string(key.podUID), spec.Plugin, key.volume)
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].PodUID != out[j].PodUID {
			return out[i].PodUID < out[j].PodUID
		}
		return out[i].Volume < out[j].Volume
	})
	return out
}

type nopRecorder struct{}

func (nopRecorder) OperationDone(Operation, error, time.Duration) {}
func (nopRecorder) VolumesMounted(int)                            {}
func (nopRecorder) VolumeWritten()                                {}
