// Package volumemanager keeps the ConfigMap and projected volumes of a
// node's pods on disk, with the kubelet's structure
// (docs/kubelet-behaviour.md, "Volume manager"; docs/architecture.md):
//
//   - cache: the desired state of world (the volumes some source wants,
//     each with its pod and directory) and the actual state of world (the
//     volumes on disk, each with a remountRequired flag), each its own type
//     with its own lock;
//   - populator: fills the desired state from the pods the pod workers sync
//     (every WaitForAttachAndMount marks its pod; the next pass re-reads it
//     and flags its mounted volumes for a remount) and drops the pods that
//     are no longer active, told change by change;
//   - reconciler: unmounts volumes no source wants, mounts those not on
//     disk and remounts flagged ones, one operation at a time per volume,
//     retrying failures with per-volume backoff (500 ms doubling to
//     2 m 2 s). It reads only the desired state, so a second source of
//     volumes (a CSI publish call) needs no change to it;
//   - this package: the wiring (Manager), the disk work of an operation
//     (executor.go: payload, atomic writer, fsGroup, nested mount points),
//     and the reconstruction of the actual state from disk at start.
//
// Both loops keep the kubelet's 100 ms grid but do work in proportion to
// what changed since their last pass, not to the number of pods, and run a
// pass only at the grid points where something gave them work
// (pacedloop). A node where nothing changes wakes neither loop.
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
// volume with the atomic writer (executor.go). A projected volume gets its
// configMap and downwardAPI sources; its serviceAccountToken, secret,
// clusterTrustBundle and podCertificate sources are left out, never fail
// it, and are listed in VolumeStatus.NotServed. A failed mount or remount
// emits a FailedMount event on the pod; a failed first mount leaves no
// volume, and a failed remount keeps the previous content on disk (the
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
//
// Locks, when more than one is held, are taken in this order: the
// populator's or the sources' (sources.go), the reconciler's, the desired
// state's, the actual state's.
package volumemanager

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/populator"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/reconciler"
)

// ConfigMapGetter is the ConfigMap source (configmapcache.Manager).
type ConfigMapGetter interface {
	GetConfigMap(namespace, name string) (*corev1.ConfigMap, error)
}

// DiskLimiter bounds the volume operations that work on the disk at once
// (golang.org/x/sync/semaphore.Weighted).
type DiskLimiter interface {
	Acquire(ctx context.Context, n int64) error
	Release(n int64)
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
	Events   reconciler.EventRecorder
	Recorder reconciler.Recorder
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

// Manager is the volume manager of one node: the states, the populator
// and the reconciler, wired.
type Manager struct {
	opts       Options
	clock      clock.WithTicker
	desired    *cache.DesiredState
	actual     *cache.ActualState
	populator  *populator.Populator
	reconciler *reconciler.Reconciler
	// sourceMu serializes AddVolume and RemoveVolume (sources.go).
	sourceMu sync.Mutex
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
	m := &Manager{opts: opts, clock: opts.Clock, desired: cache.NewDesiredState(), actual: cache.NewActualState()}
	origin := opts.Clock.Now()
	m.reconciler = reconciler.New(reconciler.Options{
		Desired: m.desired, Actual: m.actual,
		Executor: &executor{configMaps: opts.ConfigMaps, nodeAllocatable: opts.NodeAllocatable, diskLimiter: opts.DiskLimiter, clock: opts.Clock},
		Events:   opts.Events, Recorder: opts.Recorder,
		Clock: opts.Clock, Period: opts.LoopPeriod, Origin: origin.Add(opts.LoopPeriod / 2),
	})
	m.populator = populator.New(populator.Options{
		RootDir: opts.RootDir, Desired: m.desired, Actual: m.actual, HandOver: m.reconciler.HandOver,
		Clock: opts.Clock, Period: opts.LoopPeriod, Origin: origin,
	})
	return m, nil
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
	done := make(chan struct{})
	go func() { m.populator.Run(ctx); close(done) }()
	m.reconciler.Run(ctx)
	<-done
}

// PodActive says pod's volumes must stay; the pod source calls it before
// the pod's first sync (populator.PodActive).
func (m *Manager) PodActive(pod types.UID) { m.populator.PodActive(pod) }

// PodInactive says pod's volumes must go (populator.PodInactive).
func (m *Manager) PodInactive(pod types.UID) { m.populator.PodInactive(pod) }

// PodsSynced says the pod source has listed every pod: from now on a pod
// that is not active loses its volumes, and so does a volume found on disk
// whose pod is not active.
func (m *Manager) PodsSynced() { m.populator.PodsSynced() }

// RemountConfigMap makes every volume that reads namespace/name read it
// again, so a change seen by a watch reaches disk without waiting for the
// pods' next sync (reconciler.ConfigMapChanged).
func (m *Manager) RemountConfigMap(namespace, name string) {
	m.reconciler.ConfigMapChanged(m.desired.VolumesReading(namespace, name))
}
