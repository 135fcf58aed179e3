package csidriver

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/core"
)

// PluginCSI is the kubelet's directory of CSI volumes, in which a target
// path lies: <root>/pods/<uid>/volumes/kubernetes.io~csi/<volume>/mount.
const PluginCSI podrefs.Plugin = "kubernetes.io~csi"

// volumes is what the node service asks of the volume core
// (core.Core).
type volumes interface {
	AddVolume(v cache.DesiredVolume)
	RestoreVolume(v cache.DesiredVolume)
	RemoveVolume(key cache.VolumeKey)
	WaitForVolume(ctx context.Context, key cache.VolumeKey) error
	WaitForVolumeGone(ctx context.Context, key cache.VolumeKey) error
}

// objectWatches is what it asks of the watches, one per object its
// volumes read (watchSet: configmapcache.Watches and SecretWatches).
type objectWatches interface {
	Add(ref objectRef)
	Remove(ref objectRef)
}

// accessChecker says whether a pod's service account may read a ConfigMap
// (access.go); nil checks nothing beyond the namespace.
type accessChecker interface {
	MayGet(ctx context.Context, pod podInfo, configMap string) error
}

// nodeServer is the CSI Node service.
type nodeServer struct {
	csi.UnimplementedNodeServer
	nodeName string
	volumes  volumes
	watches  objectWatches
	access   accessChecker
	state    stateDir
	// tmpfs, in the Secrets mode, mounts a tmpfs at the target path of
	// each volume that holds Secret bytes; nil refuses such volumes.
	tmpfs *tmpfsMounts
	// reads, where set (ReadAsPod), read each volume's ConfigMap as its
	// pod, with the token of its publish call; revoked are the volumes
	// whose pod's read was refused at a republish, which get no update
	// (followed), and remount makes volumes read their ConfigMap again.
	reads   *podReads
	revoked map[cache.VolumeKey]bool
	remount func(keys []cache.VolumeKey)
	// tokens keeps each volume's token for the driver's next start; nil
	// keeps none.
	tokens *tokenKeeper

	// mu guards published and locks; locks serializes the calls of one
	// volume (the CSI spec lets a CO send them concurrently).
	mu        sync.Mutex
	published map[string]record
	locks     map[string]*volumeLock
}

// volumeLock is one volume's lock, kept while some call holds or awaits it.
type volumeLock struct {
	sync.Mutex
	users int
}

func newNodeServer(nodeName string, v volumes, watches objectWatches, access accessChecker, state stateDir) *nodeServer {
	return &nodeServer{nodeName: nodeName, volumes: v, watches: watches, access: access, state: state,
		published: map[string]record{}, locks: map[string]*volumeLock{}, revoked: map[cache.VolumeKey]bool{}}
}

// lock takes volumeID's lock and returns its release, which forgets the
// lock when no other call holds or awaits it.
func (s *nodeServer) lock(volumeID string) func() {
	s.mu.Lock()
	l, ok := s.locks[volumeID]
	if !ok {
		l = &volumeLock{}
		s.locks[volumeID] = l
	}
	l.users++
	s.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		s.mu.Lock()
		if l.users--; l.users == 0 {
			delete(s.locks, volumeID)
		}
		s.mu.Unlock()
	}
}

func (s *nodeServer) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: s.nodeName}, nil
}

// NodeGetCapabilities claims VOLUME_MOUNT_GROUP: the kubelet passes the
// pod's fsGroup in the publish call and changes no file itself, so files
// written after the first publish (every update) get the group too.
func (s *nodeServer) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{{
		Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP}},
	}}}, nil
}

// NodePublishVolume writes the volume's files at the target path and keeps
// them up to date until NodeUnpublishVolume. It returns once the files
// are on disk, or with the reason they cannot be: the kubelet shows it in
// the pod's events and calls again.
func (s *nodeServer) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	rec, err := recordOf(req)
	if err != nil {
		return nil, err
	}
	defer s.lock(rec.VolumeID)()

	s.mu.Lock()
	old, known := s.published[rec.VolumeID]
	s.mu.Unlock()
	if known && !old.same(rec) {
		return nil, status.Errorf(codes.AlreadyExists, "volume %s is already published at %s with other attributes", rec.VolumeID, old.TargetPath)
	}
	spec, desired, err := desiredVolume(rec)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := s.servesSecrets(spec); err != nil {
		return nil, err
	}
	if err := s.readAsPod(ctx, req, rec, spec, desired.Key, known); err != nil {
		return nil, err
	}
	if !known {
		if err := s.mayGet(ctx, spec); err != nil {
			s.releaseTokens(ctx, spec, rec.VolumeID)
			return nil, err
		}
		if err := s.mountTmpfs(spec, rec); err != nil {
			s.releaseTokens(ctx, spec, rec.VolumeID)
			return nil, err
		}
		s.serve(spec, desired, false)
	}
	if err := s.volumes.WaitForVolume(ctx, desired.Key); err != nil {
		if known {
			// Published and served: the files stay, and so does the volume.
			return nil, status.Errorf(codes.Unavailable, "volume %s is published but not on disk: %v", rec.VolumeID, err)
		}
		s.withdraw(ctx, spec, desired, rec.VolumeID)
		return nil, publishError(ctx, err)
	}
	if !known {
		if err := s.state.save(rec); err != nil {
			s.withdraw(ctx, spec, desired, rec.VolumeID)
			return nil, status.Errorf(codes.Internal, "recording volume %s: %v", rec.VolumeID, err)
		}
		s.mu.Lock()
		s.published[rec.VolumeID] = rec
		s.mu.Unlock()
		klog.FromContext(ctx).V(2).Info("Published volume", "volumeID", rec.VolumeID, "pod", klog.KRef(spec.Pod.Namespace, spec.Pod.Name),
			"objects", len(spec.objects()), "updates", desired.Layout, "targetPath", rec.TargetPath)
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// serve makes desired the volume core's, and its ConfigMap watched. A
// volume restored after a restart (restored) has its files on disk made
// the core's at once, so that an unpublish before its first
// remount removes them.
func (s *nodeServer) serve(spec volumeSpec, desired cache.DesiredVolume, restored bool) {
	// The watches first: the reconciler may mount the volume as soon as
	// it is added, and reads it from the watches.
	for _, ref := range spec.objects() {
		s.watches.Add(ref)
	}
	if restored {
		s.volumes.RestoreVolume(desired)
	} else {
		s.volumes.AddVolume(desired)
	}
}

// withdraw undoes serve, for a volume that never made it to disk, and
// forgets its pod's token. Its tmpfs, if it has one, is unmounted once the
// core is done with the volume, so that nothing is written beneath it.
// Unpublish instead waits for the files to go before it drops the watches.
func (s *nodeServer) withdraw(ctx context.Context, spec volumeSpec, desired cache.DesiredVolume, volumeID string) {
	s.volumes.RemoveVolume(desired.Key)
	s.unwatch(spec)
	s.releaseTokens(ctx, spec, volumeID)
	if s.tmpfs == nil || !spec.Source.HoldsSecrets() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), withdrawWait)
	defer cancel()
	if err := s.volumes.WaitForVolumeGone(ctx, desired.Key); err != nil {
		klog.FromContext(ctx).Error(err, "Removing a volume that failed to publish; its tmpfs stays until its unpublish", "volumeID", volumeID)
		return
	}
	if err := s.unmountTmpfs(spec, desired.Dir); err != nil {
		klog.FromContext(ctx).Error(err, "Unmounting the tmpfs of a volume that failed to publish", "volumeID", volumeID)
	}
}

// unwatch drops the volume's references to its objects' watches.
func (s *nodeServer) unwatch(spec volumeSpec) {
	for _, ref := range spec.objects() {
		s.watches.Remove(ref)
	}
}

// recordOf checks a publish call's fields, as the CSI spec requires them.
func recordOf(req *csi.NodePublishVolumeRequest) (record, error) {
	switch {
	case req.GetVolumeId() == "":
		return record{}, status.Error(codes.InvalidArgument, "volume_id is required")
	case req.GetTargetPath() == "":
		return record{}, status.Error(codes.InvalidArgument, "target_path is required")
	case req.GetVolumeCapability() == nil:
		return record{}, status.Error(codes.InvalidArgument, "volume_capability is required")
	case req.GetVolumeCapability().GetBlock() != nil:
		return record{}, status.Error(codes.InvalidArgument, "block access is not supported: the volume is a directory of files")
	}
	if err := validVolumeID(req.GetVolumeId()); err != nil {
		return record{}, status.Error(codes.InvalidArgument, err.Error())
	}
	if !filepath.IsAbs(req.GetTargetPath()) {
		return record{}, status.Errorf(codes.InvalidArgument, "target_path %q is not absolute", req.GetTargetPath())
	}
	// The pod's token is never recorded, nor compared: each republish
	// brings a newer one.
	return record{
		VolumeID: req.GetVolumeId(), TargetPath: filepath.Clean(req.GetTargetPath()), VolumeContext: withoutTokens(req.GetVolumeContext()),
		MountGroup: req.GetVolumeCapability().GetMount().GetVolumeMountGroup(), ReadOnly: req.GetReadonly(),
	}, nil
}

// desiredVolume turns a record into the volume core's volume, from what
// the kubelet told (the pod's namespace, name and uid, its fsGroup): the
// pod is the subject of the volume's events, and the group its files get.
func desiredVolume(rec record) (volumeSpec, cache.DesiredVolume, error) {
	spec, err := parseAttributes(rec.VolumeContext)
	if err != nil {
		return spec, cache.DesiredVolume{}, err
	}
	req := &cache.Request{
		Namespace: spec.Pod.Namespace,
		Subject: &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Namespace: spec.Pod.Namespace, Name: spec.Pod.Name, UID: spec.Pod.UID},
		},
	}
	if rec.MountGroup != "" {
		gid, err := strconv.ParseInt(rec.MountGroup, 10, 64)
		if err != nil || gid < 0 {
			return spec, cache.DesiredVolume{}, fmt.Errorf("volume_mount_group %q is not a group id", rec.MountGroup)
		}
		req.FSGroup = &gid
	}
	name := volumeName(rec)
	return spec, cache.DesiredVolume{
		Key:     cache.VolumeKey{PodUID: spec.Pod.UID, Volume: name},
		Request: req,
		Spec:    spec.keptVolume(name),
		Dir:     rec.TargetPath,
		Layout:  spec.Layout,
	}, nil
}

// volumeName is the pod's name for the volume, read from the target path
// the kubelet chose (.../kubernetes.io~csi/<volume>/mount), or the volume
// id when the path has another shape.
func volumeName(rec record) string {
	parent := filepath.Dir(rec.TargetPath)
	if filepath.Base(rec.TargetPath) == "mount" && filepath.Base(filepath.Dir(parent)) == string(PluginCSI) {
		return filepath.Base(parent)
	}
	return rec.VolumeID
}

// publishError says why a volume could not be set up, with the code that
// fits its cause as the volume manager classified it: NotFound for a
// missing ConfigMap, Unavailable when the ConfigMap cannot be read yet (the
// apiserver is down: the kubelet keeps the target directory and retries),
// FailedPrecondition when the ConfigMap lacks what the volume asks for or
// its files cannot be written as asked, Internal for the disk.
func publishError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return status.FromContextError(ctxErr).Err()
	}
	switch core.CauseOf(err) {
	case core.CauseObjectNotFound:
		return status.Error(codes.NotFound, err.Error())
	case core.CauseNotReadable:
		return status.Error(codes.Unavailable, err.Error())
	case core.CauseKeyMissing, core.CauseInvalidPayload:
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	return status.Errorf(codes.Internal, "writing the volume: %v", err)
}

// NodeUnpublishVolume removes the volume's files and its target path, and
// stops keeping it up to date. A volume the driver does not know (never
// published, or already unpublished) succeeds, its empty target directory
// removed if there is one.
func (s *nodeServer) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	switch {
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	case req.GetTargetPath() == "":
		return nil, status.Error(codes.InvalidArgument, "target_path is required")
	}
	defer s.lock(req.GetVolumeId())()
	s.mu.Lock()
	rec, known := s.published[req.GetVolumeId()]
	s.mu.Unlock()
	if !known {
		if err := removeUnknownTarget(req.GetTargetPath()); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		return &csi.NodeUnpublishVolumeResponse{}, nil
	}
	spec, desired, err := desiredVolume(rec)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "the record of volume %s no longer parses: %v", rec.VolumeID, err)
	}
	s.volumes.RemoveVolume(desired.Key)
	if err := s.volumes.WaitForVolumeGone(ctx, desired.Key); err != nil {
		return nil, status.Errorf(codes.Internal, "removing volume %s: %v", rec.VolumeID, err)
	}
	s.unwatch(spec)
	s.releaseTokens(ctx, spec, rec.VolumeID)
	s.setRevoked(desired.Key, false)
	if err := s.unmountTmpfs(spec, desired.Dir); err != nil {
		return nil, status.Errorf(codes.Internal, "unmounting the tmpfs of volume %s: %v", rec.VolumeID, err)
	}
	if err := s.state.remove(rec.VolumeID); err != nil {
		return nil, status.Errorf(codes.Internal, "removing the record of volume %s: %v", rec.VolumeID, err)
	}
	s.mu.Lock()
	delete(s.published, rec.VolumeID)
	s.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("Unpublished volume", "volumeID", rec.VolumeID, "pod", klog.KRef(spec.Pod.Namespace, spec.Pod.Name))
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// removeUnknownTarget removes the target path of a volume the driver has
// no record of (its record was lost or could not be read): the atomic
// writer's files, told by their layout, and then the directory. Anything
// else in it is left, with an error: without a record the driver cannot
// tell the in-place layout's files from somebody else's.
func removeUnknownTarget(path string) error {
	if err := atomicwriter.RemoveOwn(path); err != nil {
		return fmt.Errorf("target path of a volume this driver has no record of: %w", err)
	}
	return nil
}
