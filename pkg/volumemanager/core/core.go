// Package core keeps volumes on disk for whoever wants them, and knows no
// pod: the desired state of world (cache: the volumes its one source wants,
// each with its directory), the actual state of world
// (the volumes on disk, each with a remountRequired flag), the reconciler
// (unmounts volumes no source wants, mounts those not on disk and remounts
// flagged ones, one operation at a time per volume, retrying failures with
// per-volume backoff, 500 ms doubling to 2 m 2 s) and the executor
// (executor.go: payload, atomic or in-place writer, fsGroup, nested mount
// points), whose typed failures (failures.go) travel unchanged to whoever
// waits.
//
// A source plugs in with its desired volumes, its reconstruction at start
// and its waits. A source that asks for volumes one at a time (the CSI
// driver's publish calls, pkg/csidriver) uses AddVolume, RestoreVolume,
// RemoveVolume, WaitForVolume and WaitForVolumeGone (sources.go). A source
// with a populator of its own (the pods source, pkg/volumemanager) reads
// and fills the states through Desired, Actual, Failure, HandOver and
// Busy, and polls with WaitEvery.
//
// A mount reads the ConfigMaps through ConfigMapGetter, and the Secrets
// through SecretGetter where there is one (the driver's Secrets mode), with
// the operation's context. A projected volume gets its configMap and
// downwardAPI sources (the latter through the Request's FieldResolver), and
// its secret sources where Secrets are served; its serviceAccountToken,
// clusterTrustBundle and podCertificate sources (and secret sources where
// no Secret is served) are left out, never fail it, and are listed in
// VolumeStatus.NotServed. A failed mount or remount emits a FailedMount
// event on the Request's subject; a failed first mount leaves no volume,
// and a failed remount keeps the previous content on disk (the kubelet
// deletes it after a failed write; nodeagent does not). A missing optional
// ConfigMap gives an empty volume, or no files from that source.
//
// RemountConfigMap (a watch's change notification) reaches every volume
// that reads the ConfigMap: a mounted one is remounted, one whose operation
// is in flight is read again when it ends, and a failing one is retried at
// the next pass instead of after its backoff.
//
// Locks, when more than one is held, are taken in this order: the source's
// own (a populator's, or sourceMu), the reconciler's, the desired state's,
// the actual state's.
package core

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/reconciler"
)

// ConfigMapGetter is the ConfigMap source (configmapcache.Manager, or the
// driver's configmapcache.Watches). A read ends when ctx does: a volume
// operation passes its own, which ends at shutdown.
type ConfigMapGetter interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
}

// SecretGetter is the Secret source (the driver's
// configmapcache.SecretWatches), read as ConfigMapGetter is. Nil serves no
// Secret: the agent's projected volumes leave their secret sources out.
type SecretGetter interface {
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// DiskLimiter bounds the volume operations that work on the disk at once
// (golang.org/x/sync/semaphore.Weighted).
type DiskLimiter interface {
	Acquire(ctx context.Context, n int64) error
	Release(n int64)
}

// Options configure NewCore.
type Options struct {
	ConfigMaps ConfigMapGetter
	// Secrets, optional, serves Secret volumes and projected volumes'
	// secret sources.
	Secrets SecretGetter
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
	// AtomicWrite writes a volume of the atomic layout; nil is
	// atomicwriter.Write (tests count its calls).
	AtomicWrite AtomicWrite
	// FileOwners honours the volumes' defaultUser and their items' user
	// (KEP-5936), as a kubelet with its gate AtomicWriteVolumeUserFields
	// on; off, the files are the process's, as with the gate off.
	FileOwners bool
}

// AtomicWrite is atomicwriter.Write's signature.
type AtomicWrite func(dir string, payload map[string]atomicwriter.FileProjection, opts atomicwriter.Options) (bool, error)

// Core is the part of a volume manager that knows volumes, not who wants
// them: the desired and actual states, the reconciler and the executor.
// A source puts volumes in the desired state (AddVolume, or its own
// populator), rebuilds what it had on disk at start (RestoreVolume, or its
// own reconstruction), and waits for the reconciler (WaitForVolume,
// WaitForVolumeGone, or its own waits). The agent is a Core and the pods
// source (Manager); the CSI driver is a Core and its publish calls.
type Core struct {
	opts       Options
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
func New(opts Options) (*Core, error) {
	if opts.ConfigMaps == nil {
		return nil, fmt.Errorf("volumemanager/core: ConfigMaps is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.AtomicWrite == nil {
		opts.AtomicWrite = atomicwriter.Write
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
		Executor: &executor{objects: objectSources{configMaps: opts.ConfigMaps, secrets: opts.Secrets}, diskLimiter: opts.DiskLimiter, clock: opts.Clock, atomicWrite: opts.AtomicWrite, fileOwners: opts.FileOwners},
		Events:   opts.Events, Recorder: opts.Recorder,
		Clock: opts.Clock, Period: opts.LoopPeriod, Origin: c.origin.Add(opts.LoopPeriod / 2), Wake: opts.Wake,
	})
	return c, nil
}

// Run runs the reconciler until ctx ends, and waits for the operations in
// flight.
func (c *Core) Run(ctx context.Context) { c.reconciler.Run(ctx) }

// Options returns the options New was given, defaults filled in.
func (c *Core) Options() Options { return c.opts }

// Desired is the desired state of world, for a source that fills it
// itself (a populator).
func (c *Core) Desired() *cache.DesiredState { return c.desired }

// Actual is the actual state of world, for a source's reconstruction at
// start and its waits.
func (c *Core) Actual() *cache.ActualState { return c.actual }

// Failure is key's last failed operation, if its volume is failing.
func (c *Core) Failure(key cache.VolumeKey) (reconciler.Failure, bool) {
	return c.reconciler.Failure(key)
}

// HandOver has the reconciler look at keys at its next pass: what a
// populator calls after changing the desired state.
func (c *Core) HandOver(keys ...cache.VolumeKey) { c.reconciler.HandOver(keys...) }

// Busy are the pods with an operation in flight.
func (c *Core) Busy() sets.Set[types.UID] { return c.reconciler.Busy() }

// Reconciler is the core's reconciler, for tests and benchmarks that run
// its passes by hand (Pass, Wait); Run runs them otherwise.
func (c *Core) Reconciler() *reconciler.Reconciler { return c.reconciler }

// Origin is where a populator beside the reconciler starts its grid: half
// a period before the reconciler's.
func (c *Core) Origin() time.Time { return c.origin }

// RemountConfigMap makes every volume that reads namespace/name read it
// again, so a change seen by a watch reaches disk without waiting for the
// pods' next sync (reconciler.ObjectChanged).
func (c *Core) RemountConfigMap(namespace, name string) {
	c.reconciler.ObjectChanged(c.desired.VolumesReading(model.ConfigMap, namespace, name))
}
