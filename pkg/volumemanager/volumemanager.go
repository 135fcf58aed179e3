// Package volumemanager is the pods source of the volume core
// (pkg/volumemanager/core): it keeps the ConfigMap and projected volumes of
// a node's pods on disk, with the kubelet's structure
// (docs/kubelet-behaviour.md, "Volume manager"; docs/architecture.md). The
// core knows volumes, not pods; this package knows pods:
//
//   - the populator fills the core's desired state from the pods the pod
//     workers sync (every WaitForAttachAndMount marks its pod; the next
//     pass re-reads it and flags its mounted volumes for a remount) and
//     drops the pods that are no longer active, told change by change;
//   - a pod's volume Request (podrequest.go): its namespace, fsGroup, the
//     mount points of nested volumes, and its downward API fields
//     (downwardapi.go) for projected volumes' downwardAPI sources;
//   - the reconstruction scans the kubelet's plugin directories at start
//     (reconstruct.go), and the waits of a pod's sync and teardown
//     (waits.go).
//
// The CSI driver's publish calls (pkg/csidriver) are the core's other
// source, with a Core of their own.
//
// In the agent both loops keep the kubelet's 100 ms grid but do work in
// proportion to what changed since their last pass, not to the number of
// pods, and run a pass only at the grid points where something gave them
// work (pacedloop). A node where nothing changes wakes neither loop.
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
// On start-up Run rebuilds the actual state from disk. Volumes found there
// are kept until the pod source has synced and their pod is known to be
// gone, so a restart never deletes files that a pod still uses.
//
// Locks, when more than one is held, are taken in this order: the
// populator's, then the core's (core's package doc).
package volumemanager

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/core"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/populator"
)

// Options configure New.
type Options struct {
	// Core configures the volume core the pods source feeds.
	Core core.Options
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
	core      *core.Core
	opts      Options
	populator *populator.Populator
}

// New returns a Manager; call Run to start its loops.
func New(opts Options) (*Manager, error) {
	if opts.RootDir == "" {
		return nil, fmt.Errorf("volumemanager: RootDir is required")
	}
	c, err := core.New(opts.Core)
	if err != nil {
		return nil, err
	}
	opts.Core = c.Options() // defaults filled in
	m := &Manager{core: c, opts: opts}
	m.populator = populator.New(populator.Options{
		RootDir: opts.RootDir, Desired: c.Desired(), Actual: c.Actual(), HandOver: c.HandOver, Request: m.requestFor,
		Clock: opts.Core.Clock, Period: opts.Core.LoopPeriod, Origin: c.Origin(),
	})
	return m, nil
}

// RemountConfigMap makes every volume that reads namespace/name read it
// again (core.Core.RemountConfigMap).
func (m *Manager) RemountConfigMap(namespace, name string) { m.core.RemountConfigMap(namespace, name) }

// Volumes is every volume the core knows, for /debug/volumes.
func (m *Manager) Volumes() []core.VolumeStatus { return m.core.Volumes() }

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
	m.core.Run(ctx)
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
