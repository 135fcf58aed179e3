// Package volumemanager keeps ConfigMap and projected volumes on disk, with
// the kubelet's structure (docs/kubelet-behaviour.md, "Volume manager";
// docs/architecture.md). Its core knows volumes, not who wants them; a
// source plugs into it with its desired volumes, its reconstruction at
// start and its waits:
//
//   - the core (Core, core.go and sources.go): the desired state of world
//     (cache: the volumes some source wants, each with its one owner and
//     its directory), the actual state of world (the volumes on disk, each
//     with a remountRequired flag), the reconciler (unmounts volumes no
//     source wants, mounts those not on disk and remounts flagged ones,
//     one operation at a time per volume, retrying failures with
//     per-volume backoff, 500 ms doubling to 2 m 2 s) and the executor
//     (executor.go: payload, atomic writer, fsGroup, nested mount points),
//     whose typed failures (failures.go) travel unchanged to the waits;
//   - the pods source (Manager, this file, waits.go, reconstruct.go): the
//     populator fills the desired state from the pods the pod workers sync
//     (every WaitForAttachAndMount marks its pod; the next pass re-reads it
//     and flags its mounted volumes for a remount) and drops the pods that
//     are no longer active, told change by change; the reconstruction
//     scans the kubelet's plugin directories at start;
//   - the CSI driver's publish calls (pkg/csidriver) are the other source:
//     a Core of its own, AddVolume and RestoreVolume from its records,
//     WaitForVolume and WaitForVolumeGone.
//
// In the agent both loops keep the kubelet's 100 ms grid but do work in proportion to
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
// kubelet keep its timing; the driver's core writes every change as the
// watch delivers it (reconciler.WakeAtOnce).
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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/populator"
)

// Options configure New.
type Options struct {
	CoreOptions
	// RootDir holds pods/<uid>/volumes/<plugin>/<volume>.
	RootDir string
	// NodeAllocatable, optional, gives the node's allocatable resources,
	// which downwardAPI items report for limits a container does not set.
	NodeAllocatable func() (corev1.ResourceList, error)
}

// Manager is the volume manager of one node's pods: a Core, and the pods
// source that feeds it (the populator, the reconstruction from the
// kubelet's directories, the pod workers' waits).
type Manager struct {
	*Core
	opts      Options
	populator *populator.Populator
}

// New returns a Manager; call Run to start its loops.
func New(opts Options) (*Manager, error) {
	if opts.RootDir == "" {
		return nil, fmt.Errorf("volumemanager: RootDir is required")
	}
	core, err := NewCore(opts.CoreOptions)
	if err != nil {
		return nil, err
	}
	opts.CoreOptions = core.opts // defaults filled in
	m := &Manager{Core: core, opts: opts}
	m.populator = populator.New(populator.Options{
		RootDir: opts.RootDir, Desired: m.desired, Actual: m.actual, HandOver: m.reconciler.HandOver, Request: m.requestFor,
		Clock: opts.Clock, Period: opts.LoopPeriod, Origin: core.origin,
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
	m.Core.Run(ctx)
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
