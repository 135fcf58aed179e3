package volumemanager

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/reconciler"
)

// ConfigMapGetter is the ConfigMap source (configmapcache.Manager, or the
// driver's configmapcache.Watches). A read ends when ctx does: a volume
// operation passes its own, which ends at shutdown.
type ConfigMapGetter interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
}

// DiskLimiter bounds the volume operations that work on the disk at once
// (golang.org/x/sync/semaphore.Weighted).
type DiskLimiter interface {
	Acquire(ctx context.Context, n int64) error
	Release(n int64)
}

// CoreOptions configure NewCore.
type CoreOptions struct {
	ConfigMaps ConfigMapGetter
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
	// LoopPeriod is the reconciler's period; default 100 ms.
	LoopPeriod time.Duration
	// Wake is when a change RemountConfigMap reports is written: the
	// agent keeps the kubelet's pacing (reconciler.WakeHalfPeriod), the
	// driver owes it nothing (reconciler.WakeAtOnce).
	Wake reconciler.Wake
	// MountTimeout bounds the waits; default 2 m 3 s, as in the kubelet.
	MountTimeout time.Duration
}

// Core is the part of a volume manager that knows volumes, not who wants
// them: the desired and actual states, the reconciler and the executor.
// A source puts volumes in the desired state (AddVolume, or its own
// populator), rebuilds what it had on disk at start (RestoreVolume, or its
// own reconstruction), and waits for the reconciler (WaitForVolume,
// WaitForVolumeGone, or its own waits). The agent is a Core and the pods
// source (Manager); the CSI driver is a Core and its publish calls.
type Core struct {
	opts       CoreOptions
	clock      clock.WithTicker
	desired    *cache.DesiredState
	actual     *cache.ActualState
	reconciler *reconciler.Reconciler
	// origin is where the reconciler's grid starts, less half a period:
	// a populator that runs beside it passes on a grid half a period
	// before the reconciler's.
	origin time.Time
	// sourceMu serializes AddVolume and RemoveVolume (sources.go).
	sourceMu sync.Mutex
}

// NewCore returns a Core; call Run to start its reconciler.
func NewCore(opts CoreOptions) (*Core, error) {
	if opts.ConfigMaps == nil {
		return nil, fmt.Errorf("volumemanager: ConfigMaps is required")
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
	c := &Core{opts: opts, clock: opts.Clock, desired: cache.NewDesiredState(), actual: cache.NewActualState(), origin: opts.Clock.Now()}
	c.reconciler = reconciler.New(reconciler.Options{
		Desired: c.desired, Actual: c.actual,
		Executor: &executor{configMaps: opts.ConfigMaps, diskLimiter: opts.DiskLimiter, clock: opts.Clock},
		Events:   opts.Events, Recorder: opts.Recorder,
		Clock: opts.Clock, Period: opts.LoopPeriod, Origin: c.origin.Add(opts.LoopPeriod / 2), Wake: opts.Wake,
	})
	return c, nil
}

// Run runs the reconciler until ctx ends, and waits for the operations in
// flight.
func (c *Core) Run(ctx context.Context) { c.reconciler.Run(ctx) }

// RemountConfigMap makes every volume that reads namespace/name read it
// again, so a change seen by a watch reaches disk without waiting for the
// pods' next sync (reconciler.ConfigMapChanged).
func (c *Core) RemountConfigMap(namespace, name string) {
	c.reconciler.ConfigMapChanged(c.desired.VolumesReading(namespace, name))
}
