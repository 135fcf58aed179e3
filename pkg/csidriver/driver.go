package csidriver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/utils/clock"

	"github.com/nodeagent-io/nodeagent/pkg/configmapcache"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/core"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/reconciler"
)

// DefaultDriverName is the name pods write in volumes[].csi.driver.
const DefaultDriverName = podrefs.DriverName

// Options configure New.
type Options struct {
	// DriverName is the CSIDriver object's name; default DefaultDriverName.
	DriverName string
	// NodeName is the node's name, the driver's node id.
	NodeName string
	// Endpoint is the path of the CSI socket, the same in the driver's
	// container and on the node (the DaemonSet mounts the kubelet's
	// directory at its own path).
	Endpoint string
	// RegistrationDir, if set, is the kubelet's plugins_registry directory,
	// where the driver serves the registration service; empty registers
	// nothing (tests, csi-sanity).
	RegistrationDir string
	// StateDir keeps a record of each published volume.
	StateDir string
	// ReadAs says whose permission ConfigMaps are read with: ReadAsPod
	// needs ClientAs, ReadAsDriver ConfigMaps.
	ReadAs ReadAs
	// ClientAs returns a client that authenticates with a pod's token.
	ClientAs ClientAs
	// TokenDir, optional with ReadAsPod, is a directory on a tmpfs where
	// each volume's pod token is kept for the driver's next start
	// (tokenKeeper), so that a restart serves every update at once; empty,
	// or one that is not a tmpfs (a Warning event on the node says so),
	// keeps none, and a restarted driver waits for the kubelet's next
	// publish call of each volume. onMemory checks the directory, nil for
	// statfs.
	TokenDir string
	onMemory func(dir string) error
	// ConfigMaps returns the driver's own API client of a namespace.
	ConfigMaps func(namespace string) configmapcache.ConfigMapClient
	// Secrets is the Secrets mode: volumes that read Secrets are served,
	// each on a tmpfs of its own (needs ReadAsPod, and the privilege to
	// mount). Mounter mounts them; nil is the node's (NodeMounter).
	Secrets bool
	Mounter Mounter
	// Access, optional, checks that a pod's service account may get the
	// ConfigMap its volume names (AccessReviewer).
	Access accessChecker
	// Events and Recorder, optional, are the volume core's.
	Events   reconciler.EventRecorder
	Recorder reconciler.Recorder
	// Clock is nil for the real clock.
	Clock clock.WithTicker
}

// Driver is the CSI node plugin of one node.
type Driver struct {
	opts     Options
	watches  watchSet
	core     *core.Core
	identity *identityServer
	node     *nodeServer
	register *registrationServer
	// reads are the pods' reads (ReadAsPod), nil under ReadAsDriver.
	reads *podReads
	// tokenDirErr is why TokenDir keeps no token, if it cannot.
	tokenDirErr error
	// clock is Options.Clock, or the real one.
	clock clock.WithTicker
	ready atomic.Bool
}

// New builds a driver; nothing runs until Run.
func New(opts Options) (*Driver, error) {
	if opts.DriverName == "" {
		opts.DriverName = DefaultDriverName
	}
	if opts.NodeName == "" || opts.Endpoint == "" || opts.StateDir == "" {
		return nil, errors.New("csidriver: NodeName, Endpoint and StateDir are required")
	}
	d := &Driver{opts: opts, clock: clock.RealClock{}}
	if opts.Clock != nil {
		d.clock = opts.Clock
	}
	if err := d.newWatches(); err != nil {
		return nil, err
	}
	coreOpts := core.Options{
		ConfigMaps: d.watches.configMaps, Events: opts.Events, Recorder: opts.Recorder, Clock: opts.Clock,
		Wake: reconciler.WakeAtOnce,
		// A volume's defaultUser and its items' user are its attributes:
		// the driver honours them, as a kubelet with their gate on.
		FileOwners: true,
	}
	if d.watches.secrets != nil {
		coreOpts.Secrets = d.watches.secrets
	}
	var err error
	if d.core, err = core.New(coreOpts); err != nil {
		return nil, err
	}
	d.identity = &identityServer{name: opts.DriverName, ready: d.ready.Load}
	d.node = newNodeServer(opts.NodeName, d.core, d.watches, opts.Access, stateDir{dir: filepath.Join(opts.StateDir, "volumes")})
	d.node.reads, d.node.remount = d.reads, d.core.Reconciler().ObjectChanged
	if d.opts.TokenDir != "" && d.reads == nil {
		return nil, errors.New("csidriver: a token directory keeps the pods' tokens, which only a driver reading as the pods receives (ReadAsPod)")
	}
	// A directory that cannot keep tokens (not a tmpfs, not writable) costs
	// only the restarts their speed: the driver serves without it, and Run
	// says why (unkeptTokens).
	d.node.tokens, d.tokenDirErr = d.tokenKeeper()
	if opts.Secrets {
		var mounter Mounter = NodeMounter{}
		if opts.Mounter != nil {
			mounter = opts.Mounter
		}
		d.node.tmpfs = &tmpfsMounts{mounter: mounter}
	}
	d.register = &registrationServer{driverName: opts.DriverName, endpoint: opts.Endpoint}
	return d, nil
}

// tokenKeeper is the keeper of TokenDir, where the driver reads as the
// pods.
func (d *Driver) tokenKeeper() (*tokenKeeper, error) {
	onMemory := inMemory
	if d.opts.onMemory != nil {
		onMemory = d.opts.onMemory
	}
	return newTokenKeeper(d.opts.TokenDir, onMemory)
}

// newWatches makes the driver's watches: of ConfigMaps, and of Secrets in
// the Secrets mode, each with the clients ReadAs says (a pod's token's,
// setting d.reads, or the driver's own). Every change a watch delivers
// remounts the volumes that read the object, but those whose pod's access
// was revoked (read as the pods); the core that does it exists before any
// watch starts (the first publish call).
func (d *Driver) newWatches() error {
	if d.opts.Secrets && d.opts.ReadAs != ReadAsPod {
		return errors.New("csidriver: the Secrets mode reads Secrets as the pods only (ReadAsPod): the driver may read no Secret itself")
	}
	configMaps, err := d.configMapClients()
	if err != nil {
		return err
	}
	changed := func(kind model.Kind) func(namespace, name string) {
		return func(namespace, name string) {
			d.core.Reconciler().ObjectChanged(d.node.followed(d.core.Desired().VolumesReading(kind, namespace, name)))
		}
	}
	if d.watches.configMaps, err = configmapcache.NewWatches(configMaps, changed(model.ConfigMap), d.opts.Clock); err != nil {
		return err
	}
	if d.opts.Secrets {
		if d.watches.secrets, err = configmapcache.NewSecretWatches(d.reads.secretClient, changed(model.Secret), d.opts.Clock); err != nil {
			return err
		}
	}
	if d.reads != nil {
		d.reads.reopen = d.watches.reopen
	}
	return nil
}

// configMapClients is the client of each ConfigMap's watch, as ReadAs
// says: a pod's token's (setting d.reads), or the driver's own.
func (d *Driver) configMapClients() (func(namespace, name string) configmapcache.ConfigMapClient, error) {
	switch d.opts.ReadAs {
	case ReadAsPod:
		if d.opts.ClientAs == nil {
			return nil, errors.New("csidriver: reading as the pods needs ClientAs")
		}
		d.reads = &podReads{clientAs: d.opts.ClientAs, creds: newCredentials(), clock: d.clock}
		return d.reads.configMapClient, nil
	case ReadAsDriver:
		if d.opts.ConfigMaps == nil {
			return nil, errors.New("csidriver: reading as the driver needs ConfigMaps")
		}
		return func(namespace, _ string) configmapcache.ConfigMapClient { return d.opts.ConfigMaps(namespace) }, nil
	}
	return nil, fmt.Errorf("csidriver: ReadAs %q: want %q or %q", d.opts.ReadAs, ReadAsPod, ReadAsDriver)
}

// Ready says whether the volumes published before a restart are served
// again, so that new calls may come.
func (d *Driver) Ready() bool { return d.ready.Load() }

// Registered says whether the kubelet accepted the registration (always
// false without a RegistrationDir).
func (d *Driver) Registered() bool { return d.register.registered.Load() }

// Volumes lists the volumes on disk, for /debug/volumes.
func (d *Driver) Volumes() []core.VolumeStatus { return d.core.Volumes() }

// Watching returns how many watches are open, of ConfigMaps and Secrets.
func (d *Driver) Watching() int { return d.watches.watching() }

// Run serves the CSI socket (and the registration socket) until ctx ends.
// The volumes stay on disk when it returns, and their records with them.
func (d *Driver) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("driver", d.opts.DriverName)
	ctx = klog.NewContext(ctx, logger)
	d.register.logger = logger

	var components sync.WaitGroup
	defer components.Wait()
	defer d.watches.stop()
	coreCtx, stopCore := context.WithCancel(ctx)
	defer stopCore()
	components.Go(func() { d.core.Run(coreCtx) })
	if d.reads != nil {
		components.Go(func() { d.reads.Run(coreCtx) })
	}
	d.unkeptTokens(logger)
	restored := d.restore(ctx)
	d.ready.Store(true)

	server := grpc.NewServer(grpc.UnaryInterceptor(logCalls(logger)))
	csi.RegisterIdentityServer(server, d.identity)
	csi.RegisterNodeServer(server, d.node)
	servers := []*grpc.Server{server}
	if err := serveUnix(&components, server, d.opts.Endpoint, logger); err != nil {
		return err
	}
	if d.opts.RegistrationDir != "" {
		reg := grpc.NewServer()
		registerapi.RegisterRegistrationServer(reg, d.register)
		servers = append(servers, reg)
		path := filepath.Join(d.opts.RegistrationDir, d.opts.DriverName+"-reg.sock")
		if err := serveUnix(&components, reg, path, logger); err != nil {
			server.Stop()
			return err
		}
	}
	logger.Info("CSI driver started", "endpoint", d.opts.Endpoint, "registrationDir", d.opts.RegistrationDir, "volumes", restored)
	<-ctx.Done()
	logger.Info("CSI driver stopping; volumes stay on disk")
	for _, s := range servers {
		stopWithin(s, 5*time.Second)
	}
	return nil
}

// serveUnix serves s on a unix socket at path, replacing a stale socket.
func serveUnix(wg *sync.WaitGroup, s *grpc.Server, path string, logger klog.Logger) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the stale socket %s: %w", path, err)
	}
	listener, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", path, err)
	}
	wg.Go(func() {
		if err := s.Serve(listener); err != nil {
			logger.Error(err, "gRPC server failed", "socket", path)
		}
	})
	return nil
}

// stopWithin stops s gracefully, or at once after timeout.
func stopWithin(s *grpc.Server, timeout time.Duration) {
	done := make(chan struct{})
	go func() { s.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		s.Stop()
	}
}

// logCalls logs every call at verbosity 4, and failed ones at 2 with their
// code: the kubelet shows the message in the pod's events already.
func logCalls(logger klog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(klog.NewContext(ctx, logger), req)
		if err != nil {
			logger.V(2).Info("CSI call failed", "method", info.FullMethod, "code", status.Code(err), "err", err, "duration", time.Since(start))
		} else {
			logger.V(4).Info("CSI call", "method", info.FullMethod, "duration", time.Since(start))
		}
		return resp, err
	}
}
