// Package agent wires one node agent: its API client, its informers on the
// node's pods and on its own Node, the ConfigMap cache, the volume manager,
// the pod workers, and the HTTP endpoints.
//
// An Agent holds no package-level state, so one process can run many
// (nodeagent compare simulates many nodes); each has its own client, rate
// limiter, informers, metrics registry and root directory, exactly as
// separate nodes would.
package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/internal/version"
	"github.com/nodeagent-io/nodeagent/pkg/configmapcache"
	"github.com/nodeagent-io/nodeagent/pkg/coreclient"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podconfig"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podworkers"
	"github.com/nodeagent-io/nodeagent/pkg/ttl"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/core"
)

// processDiskWork bounds the volume operations working on the disk at once
// in this process, across all its agents: one in `nodeagent run`, up to a
// thousand in `nodeagent compare`, where without a bound the goroutines
// blocked in writes, each holding an OS thread, once passed Go's limit of
// 10,000 threads (docs/performance.md). Thirty-two is far more than one
// node's volumes need at once: an update remounts the twenty pods of a
// ConfigMap together.
var processDiskWork = semaphore.NewWeighted(32)

// Config is what `nodeagent run` is told; the flags map onto it one to one.
type Config struct {
	NodeName      string
	RootDir       string
	SyncFrequency time.Duration
	Strategy      model.Strategy
	Invalidation  configmapcache.Invalidation
	// RemountOnChange makes the watch strategy remount the pods that use
	// a ConfigMap as soon as the watch delivers a change (beyond the
	// kubelet, which waits for each pod's next sync).
	RemountOnChange bool
	KubeAPIQPS      float32
	KubeAPIBurst    int
	// EventQPS and EventBurst limit the events posted, on a client of
	// their own as in the kubelet, so that a FailedMount never waits
	// behind the ConfigMap reads of a busy node. EventQPS 0 is no limit.
	EventQPS    float32
	EventBurst  int
	ContentType ContentType
	// HTTPAddress serves /metrics, /healthz, /readyz and /debug/volumes;
	// empty serves nothing.
	HTTPAddress string
	// Profiling adds Go's profiles, /debug/pprof/, to HTTPAddress, as the
	// kubelet's enableProfilingHandler does on its own port. Off by
	// default: the address is plain HTTP, with no authentication.
	Profiling bool
	// VolumeUserFields is the gate GateVolumeUserFields: the files' owner
	// from a volume's defaultUser and its items' user.
	VolumeUserFields bool
}

// DefaultConfig returns the kubelet's defaults.
func DefaultConfig() Config {
	return Config{
		RootDir:         "/var/lib/nodeagent",
		SyncFrequency:   time.Minute,
		Strategy:        model.StrategyCache,
		Invalidation:    configmapcache.InvalidateFirstReference,
		RemountOnChange: true,
		KubeAPIQPS:      50,
		KubeAPIBurst:    100,
		EventQPS:        50,
		EventBurst:      100,
		ContentType:     ContentTypeProtobuf,
		HTTPAddress:     "127.0.0.1:10356",
	}
}

// Validate says what is wrong with c, in terms of the flags.
func (c Config) Validate() error {
	var errs []error
	if c.NodeName == "" {
		errs = append(errs, errors.New("--node-name is empty: set it, or $NODE_NAME (the DaemonSet sets it from spec.nodeName)"))
	}
	if c.RootDir == "" {
		errs = append(errs, errors.New("--root-dir is empty"))
	}
	if c.SyncFrequency <= 0 {
		errs = append(errs, fmt.Errorf("--sync-frequency must be positive, got %s", c.SyncFrequency))
	}
	if c.KubeAPIQPS <= 0 || c.KubeAPIBurst <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive, got %v and %d", c.KubeAPIQPS, c.KubeAPIBurst))
	}
	if c.EventQPS < 0 || c.EventBurst <= 0 {
		errs = append(errs, fmt.Errorf("--event-qps must be 0 (no limit) or more and --event-burst positive, got %v and %d", c.EventQPS, c.EventBurst))
	}
	switch c.ContentType {
	case ContentTypeProtobuf, ContentTypeJSON:
	default:
		errs = append(errs, fmt.Errorf("--kube-api-content-type must be protobuf or json, got %q", c.ContentType))
	}
	return errors.Join(errs...)
}

// Agent is one node's agent.
type Agent struct {
	cfg     Config
	Metrics *Metrics
	// eventClient posts the events, rate-limited apart from the client
	// of everything else; nil with SharedEvents.
	eventClient *coreclient.Client

	podInformer  cache.SharedIndexInformer
	podLister    listerscorev1.PodLister
	nodeInformer cache.SharedIndexInformer
	nodeLister   listerscorev1.NodeLister

	configMaps configmapcache.Manager
	env        *envReader
	volumes    volumeManager
	workers    *podworkers.PodWorkers
	events     record.EventBroadcaster
	recorder   record.EventRecorder
	// sharedEvents: events is the caller's (SharedEvents), not started or
	// shut down here.
	sharedEvents bool
	ttl          func() time.Duration
	startTime    time.Time
}

// volumeManager is what the agent asks of its volume manager
// (volumemanager.Manager).
type volumeManager interface {
	Run(ctx context.Context)
	// WaitForAttachAndMount and WaitForUnmount are a pod sync's and a
	// pod teardown's.
	WaitForAttachAndMount(ctx context.Context, pod *corev1.Pod) error
	WaitForUnmount(ctx context.Context, pod *corev1.Pod) error
	// PodActive, PodInactive and PodsSynced tell it, change by change,
	// which pods must keep their volumes.
	PodActive(uid types.UID)
	PodInactive(uid types.UID)
	PodsSynced()
	RemountConfigMap(namespace, name string)
	RemoveOrphanedPodDirs() (int, error)
	Volumes() []core.VolumeStatus
}

// Option changes how New builds an agent, beyond what its Config says.
type Option func(*Agent)

// SharedEvents makes the agent post its events through broadcaster, which
// the caller starts (StartRecordingToSink) and shuts down, instead of
// through a broadcaster and events client of its own. The agents of one
// process (compare's simulated nodes) share one: a broadcaster holds about
// 70 KB, 15 % of an idle agent's heap.
func SharedEvents(broadcaster record.EventBroadcaster) Option {
	return func(a *Agent) { a.events, a.sharedEvents = broadcaster, true }
}

// New builds an agent; nothing runs until Run. restConfig is copied and
// given the agent's rate limits, wire format and user agent.
func New(restConfig *rest.Config, cfg Config, opts ...Option) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rc := rest.CopyConfig(restConfig)
	rc.QPS, rc.Burst = cfg.KubeAPIQPS, cfg.KubeAPIBurst
	if cfg.ContentType == ContentTypeProtobuf {
		rc.ContentType = "application/vnd.kubernetes.protobuf"
		rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	rc.UserAgent = fmt.Sprintf("nodeagent/%s (node %s)", version.Get().Version, cfg.NodeName)
	client, err := coreclient.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("creating the API client: %w", err)
	}
	a := &Agent{cfg: cfg, Metrics: NewMetrics(cfg.Strategy, cfg.Invalidation, version.Get().Version)}
	for _, opt := range opts {
		opt(a)
	}
	if !a.sharedEvents {
		if a.eventClient, err = coreclient.NewForConfig(eventsConfig(rc, cfg)); err != nil {
			return nil, fmt.Errorf("creating the events client: %w", err)
		}
	}
	a.podInformer = newPodInformer(client, cfg.NodeName)
	a.podLister = listerscorev1.NewPodLister(a.podInformer.GetIndexer())
	a.nodeInformer = newNodeInformer(client, cfg.NodeName)
	a.nodeLister = listerscorev1.NewNodeLister(a.nodeInformer.GetIndexer())
	a.ttl = ttl.Reader(func() (*corev1.Node, error) { return a.nodeLister.Get(cfg.NodeName) })

	if !a.sharedEvents {
		a.events = record.NewBroadcaster()
	}
	a.recorder = a.events.NewRecorder(coreclient.Scheme, corev1.EventSource{Component: "nodeagent", Host: cfg.NodeName})
	if err := a.buildComponents(client); err != nil {
		return nil, err
	}
	return a, nil
}

// buildComponents builds the agent's ConfigMap manager, volume manager and
// pod workers, wired as the kubelet wires its own.
func (a *Agent) buildComponents(client *coreclient.Client) error {
	cfg := a.cfg
	var err error
	var onChange func(namespace, name string)
	if cfg.RemountOnChange {
		// The volume manager reads ConfigMaps through the manager, and a
		// change the manager's watch sees remounts through the volume
		// manager, which exists by the time Run starts the watches.
		onChange = func(namespace, name string) { a.volumes.RemountConfigMap(namespace, name) }
	}
	a.configMaps, err = configmapcache.New(configmapcache.Options{
		Strategy: cfg.Strategy, Invalidation: cfg.Invalidation,
		ConfigMaps: func(namespace string) configmapcache.ConfigMapClient { return client.ConfigMaps(namespace) },
		TTL:        a.ttl, Recorder: a.Metrics, OnChange: onChange, SyncFrequency: cfg.SyncFrequency,
	})
	if err != nil {
		return err
	}
	a.env = newEnvReader(a.configMaps.GetConfigMap)
	a.volumes, err = volumemanager.New(volumemanager.Options{RootDir: cfg.RootDir, NodeAllocatable: a.nodeAllocatable,
		Core: core.Options{ConfigMaps: a.configMaps, Events: a.recorder, Recorder: a.Metrics, DiskLimiter: processDiskWork,
			FileOwners: cfg.VolumeUserFields}})
	if err != nil {
		return err
	}
	a.workers = podworkers.New(podworkers.Options{
		Sync:          a.syncPod,
		Teardown:      a.teardownPod,
		ListPods:      a.listPods,
		Housekeeping:  a.housekeeping,
		SyncFrequency: cfg.SyncFrequency,
		Recorder:      a.Metrics,
	})
	return nil
}

// syncPod is the kubelet's SyncPod as far as ConfigMaps go: register the
// pod's references, wait for its volumes, then read the ConfigMaps of its
// containers' environments as starting them would (once).
func (a *Agent) syncPod(ctx context.Context, pod *corev1.Pod) error {
	a.configMaps.RegisterPod(pod)
	if err := a.volumes.WaitForAttachAndMount(ctx, pod); err != nil {
		return err
	}
	if err := a.env.read(ctx, pod); err != nil {
		a.recorder.Eventf(pod, corev1.EventTypeWarning, "Failed", "Error: %v", err)
		return fmt.Errorf("container environment: %w", err)
	}
	return nil
}

// teardownPod removes a deleted or finished pod's volumes, then its
// ConfigMap references.
func (a *Agent) teardownPod(ctx context.Context, pod *corev1.Pod) error {
	if err := a.volumes.WaitForUnmount(ctx, pod); err != nil {
		return err
	}
	a.configMaps.UnregisterPod(pod)
	a.env.forget(pod.UID)
	return nil
}

// nodeAllocatable is the node's allocatable resources, from the informer.
func (a *Agent) nodeAllocatable() (corev1.ResourceList, error) {
	node, err := a.nodeLister.Get(a.cfg.NodeName)
	if err != nil {
		return nil, err
	}
	return node.Status.Allocatable, nil
}

func (a *Agent) housekeeping(ctx context.Context) {
	if n, err := a.volumes.RemoveOrphanedPodDirs(); err != nil {
		klog.FromContext(ctx).Error(err, "Removing orphaned pod directories failed")
	} else if n > 0 {
		klog.FromContext(ctx).V(2).Info("Removed orphaned pod directories", "count", n)
	}
}

// listPods returns the pods this agent serves: those bound to the node,
// except mirror pods, whose static pods' volumes are the kubelet's.
func (a *Agent) listPods() []*corev1.Pod {
	pods, _ := a.podLister.List(labels.Everything())
	served := pods[:0:0]
	for _, pod := range pods {
		if !podrefs.IsMirrorPod(pod) {
			served = append(served, pod)
		}
	}
	return served
}

// tellVolumes tells the volume manager whether pod must keep its volumes
// (podrefs.KeepsVolumes): bound here, not being deleted, not finished, not
// a mirror pod. The pod informer's handler calls it for every event
// before the pod workers hear of the event, so a new pod is active in the
// manager before its first sync can ask for its volumes. The work is the
// one pod's, whatever the number of pods on the node.
func (a *Agent) tellVolumes(pod *corev1.Pod, gone bool) {
	if gone || !podrefs.KeepsVolumes(pod) {
		a.volumes.PodInactive(pod.UID)
	} else {
		a.volumes.PodActive(pod.UID)
	}
}

// Run starts everything and blocks until ctx ends. Files on disk stay.
func (a *Agent) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("node", a.cfg.NodeName)
	ctx = klog.NewContext(ctx, logger)
	a.startTime = time.Now()

	if !a.sharedEvents {
		a.events.StartRecordingToSink(a.eventClient.EventSink())
		defer a.events.Shutdown()
	}

	var server *http.Server
	if a.cfg.HTTPAddress != "" {
		listener, err := net.Listen("tcp", a.cfg.HTTPAddress)
		if err != nil {
			return fmt.Errorf("listening on --http-address %s: %w", a.cfg.HTTPAddress, err)
		}
		server = &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error(err, "HTTP server failed")
			}
		}()
		logger.Info("Serving HTTP", "address", listener.Addr().String())
	}

	if _, err := a.podInformer.AddEventHandler(a.podEventHandler()); err != nil {
		return err
	}

	// The volume manager and the pod workers run until ctx ends.
	var components sync.WaitGroup
	components.Go(func() { a.volumes.Run(ctx) })
	components.Go(func() { a.workers.Run(ctx) })
	var informers sync.WaitGroup
	informers.Go(func() { a.podInformer.RunWithContext(ctx) })
	informers.Go(func() { a.nodeInformer.RunWithContext(ctx) })
	informers.Go(func() {
		// The pod source's sync lets the volume manager unmount: every
		// pod of the first list has been told by then.
		if cache.WaitForCacheSync(ctx.Done(), a.podInformer.HasSynced) {
			a.volumes.PodsSynced()
		}
	})
	logger.Info("Agent started", "strategy", a.cfg.Strategy, "invalidation", a.cfg.Invalidation,
		"syncFrequency", a.cfg.SyncFrequency, "rootDir", a.cfg.RootDir)

	<-ctx.Done()
	logger.Info("Agent stopping; volumes stay on disk")
	informers.Wait()
	components.Wait()
	a.configMaps.Stop()
	if server != nil {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdownCtx)
	}
	return nil
}

// Ready reports whether both informers have synced.
func (a *Agent) Ready() bool {
	return a.podInformer.HasSynced() && a.nodeInformer.HasSynced()
}

// Volumes lists the volumes on disk, for /debug/volumes and for tests.
func (a *Agent) Volumes() []core.VolumeStatus { return a.volumes.Volumes() }

// podEventHandler passes the informer's pod events to the pod workers as
// the kubelet's pod config source does: additions and deletions always,
// updates only when podconfig says they sync the pod, or when a status
// update finishes it (phase Succeeded or Failed: time to tear it down).
// Mirror pods are left out.
func (a *Agent) podEventHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			pod := obj.(*corev1.Pod)
			a.tellVolumes(pod, false)
			if !podrefs.IsMirrorPod(pod) {
				a.workers.UpdatePod(pod)
			}
		},
		UpdateFunc: func(oldObj, obj any) {
			old, pod := oldObj.(*corev1.Pod), obj.(*corev1.Pod)
			a.tellVolumes(pod, false)
			if podrefs.IsMirrorPod(pod) {
				return
			}
			change := podconfig.Classify(old, pod)
			a.Metrics.PodUpdate(change)
			if change == podconfig.Sync || (change == podconfig.StatusOnly && podworkers.ShouldTearDown(pod)) {
				a.workers.UpdatePod(pod)
			}
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return
			}
			a.tellVolumes(pod, true)
			if !podrefs.IsMirrorPod(pod) {
				a.workers.DeletePod(pod)
			}
		},
	}
}
